//! The wall clock, as the gateway stores and shows times: whole seconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// "14:20 UTC" for a unix time.
pub fn time_of_day(at: i64) -> String {
    let seconds = at.rem_euclid(86_400);
    format!("{:02}:{:02} UTC", seconds / 3600, seconds % 3600 / 60)
}

/// Now, in seconds since the epoch (0 if the clock is set before it).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
