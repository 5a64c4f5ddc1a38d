/**
 * node-saml (and the XML stack under it: xml-crypto, xml-encryption, three copies of xpath,
 * xmlbuilder, xml2js) and xmldom, imported when the first SAML message or IdP metadata is read
 * rather than at start: about 1.2 MB of code, some 15–20 MB resident, that an instance without a
 * SAML connection never runs. Loaded once per process; later calls get the same modules.
 */
import type * as NodeSaml from '@node-saml/node-saml';
import type * as XmlDom from '@xmldom/xmldom';

export interface SamlLibraries {
  SAML: typeof NodeSaml.SAML;
  ValidateInResponseTo: typeof NodeSaml.ValidateInResponseTo;
  DOMParser: typeof XmlDom.DOMParser;
}

let loading: Promise<SamlLibraries> | null = null;

export function loadSamlLibraries(): Promise<SamlLibraries> {
  loading ??= Promise.all([import('@node-saml/node-saml'), import('@xmldom/xmldom')]).then(([saml, xmldom]) => ({
    SAML: saml.SAML,
    ValidateInResponseTo: saml.ValidateInResponseTo,
    DOMParser: xmldom.DOMParser,
  }));
  return loading;
}
