//! When the account's usage limit lifts, as Codex says it in the `error` it sends when a
//! turn hits the limit. Measured with 0.171.0 and a model server answering 429
//! `usage_limit_reached` with `resets_at` in its body and no rate-limit headers: the
//! `account/rateLimits/updated` before it has no window, and the message says "… or try
//! again at 7:57 AM." (that day) or "… try again at Dec 10th, 2026 5:54 AM." (another
//! day), in the app-server process's local time (it followed `TZ`).

use chrono::{DateTime, Local, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};

/// The reset `message` names, in unix seconds, read in `now`'s zone; `None` when it
/// names none this reads. Codex names a minute (cut, not rounded: measured), so the limit
/// lifts by its end, which is what this returns.
pub fn limit_resets_at<Tz: TimeZone>(message: &str, now: &DateTime<Tz>) -> Option<i64> {
    let said = message.rsplit_once("try again at ")?.1;
    let said = said.trim().trim_end_matches('.').trim();
    let zone = now.timezone();
    let at = match said.rsplit_once(", ") {
        // "Dec 10th, 2026 5:54 AM"
        Some((month_day, year_time)) => {
            let (year, time) = year_time.split_once(' ')?;
            let month_day = strip_ordinal(month_day);
            let date =
                NaiveDate::parse_from_str(&format!("{month_day} {year}"), "%b %d %Y").ok()?;
            NaiveDateTime::new(date, time_of_day(time)?)
        }
        // "7:57 AM": today, or tomorrow when that minute is over.
        None => {
            let time = time_of_day(said)?;
            let today = now.naive_local().date().and_time(time);
            match today + MINUTE <= now.naive_local() {
                true => today + chrono::Duration::days(1),
                false => today,
            }
        }
    };
    let at = zone.from_local_datetime(&(at + MINUTE)).earliest()?;
    Some(at.timestamp())
}

/// The reset the message names, read in this machine's local zone (the local
/// app-server's, which runs with the gateway's environment).
pub fn limit_resets_at_here(message: &str) -> Option<i64> {
    limit_resets_at(message, &Local::now())
}

const MINUTE: chrono::Duration = chrono::Duration::minutes(1);

fn time_of_day(said: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(said.trim(), "%I:%M %p").ok()
}

/// "Dec 10th" as "Dec 10".
fn strip_ordinal(month_day: &str) -> String {
    let trimmed = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| month_day.strip_suffix(suffix))
        .unwrap_or(month_day);
    trimmed.to_owned()
}

#[cfg(test)]
mod tests {
    use chrono::{FixedOffset, Utc};

    use super::*;

    const SAID: &str = "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at";

    #[test]
    fn the_reset_codex_names_is_read_in_its_zone() {
        // 2026-12-07 05:54 UTC, as in the measurement.
        let now = Utc.with_ymd_and_hms(2026, 12, 7, 5, 54, 0).unwrap();
        let at = |text: &str| limit_resets_at(&format!("{SAID} {text}."), &now);
        // The end of the minute named.
        let utc = |h, m| {
            Utc.with_ymd_and_hms(2026, 12, 7, h, m, 0)
                .unwrap()
                .timestamp()
                + 60
        };
        assert_eq!(at("7:57 AM"), Some(utc(7, 57)));
        assert_eq!(at("12:05 PM"), Some(utc(12, 5)));
        // The minute running now is today's; one past this morning comes tomorrow.
        assert_eq!(at("5:54 AM"), Some(utc(5, 54)));
        assert_eq!(at("5:53 AM"), Some(utc(5, 53) + 86_400));
        let later = Utc.with_ymd_and_hms(2026, 12, 10, 5, 54, 0).unwrap();
        assert_eq!(at("Dec 10th, 2026 5:54 AM"), Some(later.timestamp() + 60));
        let first = Utc.with_ymd_and_hms(2027, 1, 1, 0, 30, 0).unwrap();
        assert_eq!(at("Jan 1st, 2027 12:30 AM"), Some(first.timestamp() + 60));
        assert_eq!(limit_resets_at("You've hit your usage limit.", &now), None);
        assert_eq!(at("soon"), None);

        // Berlin (UTC+1 in December): 8:57 AM there is 7:57 UTC.
        let berlin = now.with_timezone(&FixedOffset::east_opt(3600).unwrap());
        let in_berlin = limit_resets_at(&format!("{SAID} 8:57 AM."), &berlin);
        assert_eq!(in_berlin, Some(utc(7, 57)));
    }
}
