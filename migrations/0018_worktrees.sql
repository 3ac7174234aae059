-- The git worktree a chat works in (`/worktree BRANCH`): the main checkout it was made
-- from, the worktree's folder, its branch and the branch it came from (what `/merge`
-- merges into). One per chat; paths are on the machine where the chat's Codex runs.
CREATE TABLE worktrees (
    chat_key TEXT PRIMARY KEY NOT NULL,
    repo TEXT NOT NULL,
    path TEXT NOT NULL,
    branch TEXT NOT NULL,
    base TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX worktrees_by_repo ON worktrees (repo);
