//! The gateway's integration tests, one binary: each module is a story users live (a
//! platform, the inbox, workers, schedules...), over real traffic: the real `codex
//! app-server`, real SQLite files, and fakes of Telegram, Discord and the model on
//! 127.0.0.1 (`support`). Scenarios both platforms share are written once
//! (`both_platforms`) and run on each.

mod support;

mod attach;
mod attachments;
mod both_platforms;
mod chaos;
mod codex_requests;
mod commands;
mod commands_everywhere;
mod console;
mod continuity;
mod controls;
mod discord;
mod example_config;
mod first_hour;
mod fuzz;
mod hygiene;
mod inbox;
mod isolation;
mod live_work;
mod log_hygiene;
mod operations;
mod processes;
mod schedule;
mod steering;
mod tasks;
mod telegram;
mod tidy;
mod usage_limit;
mod worker_handover;
mod workers;
mod worktrees;
