/** What each scope means, in words a person approving it understands. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  openid: 'Sign you in and learn your account identifier',
  profile: 'Your name and username',
  email: 'Your email address',
  offline_access: 'Stay signed in when you are not present (refresh tokens)',
};
