/** The tables of connectors (connectors/): upstream identity providers, the accounts linked to them, their round trips. */

/** An upstream identity provider the operator added (connectors/). */
export interface ConnectorsTable {
  id: string;
  type: 'oidc' | 'github' | 'ldap';
  name: string;
  /** JSON of the type's settings, without the secret. */
  settings: string;
  /** The client secret or bind password (an encrypted envelope when AUTHCLI_KEY_ENCRYPTION_KEY is set). */
  secret: string;
  created_at: number;
}

/** An upstream account linked to the user it signs in as. */
export interface FederatedIdentitiesTable {
  connector_id: string;
  subject: string;
  user_id: string;
  created_at: number;
}

/** A redirect to an upstream and back, used once. */
export interface ConnectorStatesTable {
  state_hash: string;
  connector_id: string;
  browser_hash: string;
  code_verifier: string;
  nonce: string;
  continue_id: string | null;
  link_user_id: string | null;
  expires_at: number;
}
