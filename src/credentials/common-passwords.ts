/**
 * Passwords of 8 characters or more that lead public breach-frequency lists. Short ones are
 * already refused by the minimum length. Lower-case; compared after NFKC and lower-casing.
 */
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set([
  '12345678', '123456789', '1234567890', '12345678910', '123456789a', '1234567890a', '12341234', '11111111',
  '00000000', '87654321', '88888888', '987654321', '0987654321', '1q2w3e4r', '1q2w3e4r5t', '1q2w3e4r5t6y',
  '1qaz2wsx', '1qaz2wsx3edc', 'zaq12wsx', 'qwertyuiop', 'qwerty123', 'qwerty1234', 'qwerty12345', 'qwertyui',
  'asdfghjkl', 'asdfasdf', 'zxcvbnm123', 'password', 'password1', 'password12', 'password123', 'password1234',
  'password!', 'passw0rd', 'p@ssw0rd', 'p@ssword', 'p@ssword1', 'p@ssw0rd1', 'p@ssw0rd123', 'passwort',
  'iloveyou', 'iloveyou1', 'sunshine', 'princess', 'football', 'baseball', 'welcome1', 'welcome123',
  'superman', 'starwars', 'whatever', 'trustno1', 'letmein1', 'letmein123', 'changeme', 'changeme123',
  'administrator', 'admin123', 'admin1234', 'admin12345', 'administrator1', 'rootroot', 'master123',
  'computer', 'internet', 'michelle', 'jennifer', 'jordan23', 'liverpool', 'chelsea1', 'arsenal1',
  'abcd1234', 'abc12345', 'abcdefgh', 'abcdefg1', 'a1b2c3d4', 'aa123456', 'aa12345678', 'q1w2e3r4',
  'q1w2e3r4t5', 'qazwsxedc', 'zaq1zaq1', 'mypassword', 'secret123', 'test1234', 'test12345', 'testtest',
  'monkey123', 'dragon123', 'shadow123', 'hello123', 'hellohello', 'lovelove', 'summer2024', 'summer2025',
  'summer2026', 'winter2024', 'winter2025', 'winter2026', 'spring2025', 'spring2026', 'autumn2025',
  'welcome2024', 'welcome2025', 'welcome2026', 'password2024', 'password2025', 'password2026',
  'correcthorsebatterystaple', 'passwordpassword', 'qwertyqwerty', 'letmeinletmein', '123456123456',
  '123123123', '123321123', '1234512345', '147258369', '159753456', '741852963', '963852741',
  'iloveyou123', 'football1', 'baseball1', 'superman1', 'batman123', 'pokemon123', 'minecraft',
  'minecraft1', 'fortnite1', 'samsung123', 'google123', 'facebook1', 'linkedin1', 'gatehouse',
  'gatehouse1', 'gatehouse123',
]);
