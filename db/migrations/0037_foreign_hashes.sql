-- The users of a project whose password hash was imported and not yet rehashed (docs/provisioning.md, "Password
-- schemes"). A sign-in with an unknown address verifies the guessed password against one of them
-- (domain/accounts/password_decoy.ts), so that it takes as long as a sign-in of an imported account; this index
-- finds one without reading the project's users. Partial over the stored generated column: most users are
-- argon2id, so the index holds only the imported ones and is empty once they have all signed in.
create index users__foreign_hash on users (project_id) where password_scheme <> 'argon2id';
