//! The wall clock, as the gateway stores and shows times: whole seconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in seconds since the epoch (0 if the clock is set before it).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
