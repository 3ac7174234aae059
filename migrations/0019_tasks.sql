-- Places the bot opened for a task (a Discord thread, a Telegram topic), by the chat key
-- they are, with the task's title: the task's first message names its Codex thread after
-- it (and, with codex.task_worktrees, gives it a worktree), across restarts.
CREATE TABLE tasks (
    chat_key TEXT PRIMARY KEY NOT NULL,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
