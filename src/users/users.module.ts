/** Accounts: who they are, their roles, and their state (verified, disabled). */
import { defineModule } from '../module.ts';
import { createUserService, type UserService } from './user.service.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    users: UserService;
  }
}

export const usersModule = defineModule({
  name: 'users',
  provide: ({ db, clock }) => ({ users: createUserService({ db, clock }) }),
});
