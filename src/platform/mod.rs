//! Chat platforms: each turns its events into `Inbound` and delivers `Outbound`.

pub mod console;
