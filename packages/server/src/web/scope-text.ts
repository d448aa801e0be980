/** What each scope means, in words a person approving it understands. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  openid: 'Sign you in and learn your account identifier',
  profile: 'Your name, username and profile: picture, website, birthdate, gender, time zone and language',
  email: 'Your email address',
  address: 'Your postal address',
  phone: 'Your phone number',
  offline_access: 'Stay signed in when you are not present (refresh tokens)',
};
