-- The identity provider a login awaiting its second step went through (an upstream sign-in, or the browser
-- session a step-up confirms), so that the code, the browser session and the ID token's `idp` keep it.
-- (Numbered 0019, not 0017: other branches of this round may add 0017 and 0018; versions must not collide.)
alter table authorization_requests add column mfa_provider_id text;
