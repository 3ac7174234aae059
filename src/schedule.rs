//! When scheduled work runs: `/every` and `/at` as typed, and a schedule's next run in the
//! configured time zone. Pure: the clock and the zone are arguments, so DST and missed
//! runs are table-tested.

use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// How often a job runs, or when it runs once.
#[derive(Debug, Clone)]
pub enum Schedule {
    Every(Duration),
    /// A five-field cron pattern, as typed and parsed.
    Cron(String, Box<Cron>),
    /// Once, at this time (unix seconds).
    Once(i64),
}

/// Why a schedule was refused; the texts are for the person who typed it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("say what to do after the time")]
    NoPrompt,
    #[error("{0:?} is not an interval (15s, 10m, 2h, 1d or 1h30m)")]
    BadInterval(String),
    #[error("{0:?} is longer than a schedule may wait: at most 366 days (366d)")]
    TooLong(String),
    #[error("that is more often than allowed: at most once every {min_secs} s")]
    TooOften { min_secs: u64 },
    #[error("{pattern:?} is not a five-field cron pattern (minute hour day month weekday): {why}")]
    BadCron { pattern: String, why: String },
    #[error("the cron pattern has no closing quote")]
    UnclosedQuote,
    #[error("{0:?} is not a time (14:30, 2026-12-24 09:00 or in 2h)")]
    BadTime(String),
    #[error("{0} has passed")]
    Past(String),
    #[error("that time never comes")]
    Never,
}

/// What a schedule is checked against: the clock, the zone, the shortest interval.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub now: i64,
    pub timezone: Tz,
    pub min_interval: Duration,
}

/// Longest interval or delay taken: a year.
const MAX_SPAN_SECS: u64 = 366 * 24 * 3600;

/// `/every INTERVAL PROMPT` or `/every "CRON" PROMPT`: the schedule and the prompt.
pub fn parse_every<'a>(
    argument: &'a str,
    rules: &Rules,
) -> Result<(Schedule, &'a str), ScheduleError> {
    let argument = argument.trim();
    let (schedule, prompt) = match argument.strip_prefix('"') {
        Some(quoted) => {
            let (pattern, prompt) = quoted.split_once('"').ok_or(ScheduleError::UnclosedQuote)?;
            let cron = parse_cron(pattern)?;
            (
                Schedule::Cron(pattern.trim().to_owned(), Box::new(cron)),
                prompt,
            )
        }
        None => {
            let (interval, prompt) = split_word(argument);
            let every = parse_duration(interval).map_err(|span| match span {
                Span::Unreadable => ScheduleError::BadInterval(interval.to_owned()),
                Span::TooLong => ScheduleError::TooLong(interval.to_owned()),
            })?;
            (Schedule::Every(every), prompt)
        }
    };
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return Err(ScheduleError::NoPrompt);
    }
    if schedule.shortest_gap(rules) < rules.min_interval {
        let min_secs = rules.min_interval.as_secs();
        return Err(ScheduleError::TooOften { min_secs });
    }
    Ok((schedule, prompt))
}

/// `/at TIME PROMPT`: `14:30` (the next such time), `2026-12-24 09:00`, or `in 2h`.
pub fn parse_at<'a>(
    argument: &'a str,
    rules: &Rules,
) -> Result<(Schedule, &'a str), ScheduleError> {
    let (first, rest) = split_word(argument.trim());
    let (at, prompt) = if first.eq_ignore_ascii_case("in") {
        let (delay, prompt) = split_word(rest);
        let delay = parse_duration(delay).map_err(|span| match span {
            Span::Unreadable => ScheduleError::BadTime(format!("in {delay}")),
            Span::TooLong => ScheduleError::TooLong(format!("in {delay}")),
        })?;
        (rules.now + delay.as_secs() as i64, prompt)
    } else if let Ok(date) = NaiveDate::parse_from_str(first, "%Y-%m-%d") {
        let (time, prompt) = split_word(rest);
        let clock =
            parse_clock(time).ok_or_else(|| ScheduleError::BadTime(format!("{first} {time}")))?;
        let at = unix_of(date.and_time(clock), rules.timezone);
        if at <= rules.now {
            return Err(ScheduleError::Past(format!("{first} {time}")));
        }
        (at, prompt)
    } else {
        let clock = parse_clock(first).ok_or_else(|| ScheduleError::BadTime(first.to_owned()))?;
        (next_clock_time(clock, rules), rest)
    };
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return Err(ScheduleError::NoPrompt);
    }
    Ok((Schedule::Once(at), prompt))
}

impl Schedule {
    /// The first run after `after` (unix seconds); `None` for a job that ran once.
    pub fn next_after(&self, after: i64, timezone: Tz) -> Option<i64> {
        match self {
            Schedule::Every(every) => Some(after + every.as_secs() as i64),
            Schedule::Cron(_, cron) => {
                let local = DateTime::from_timestamp(after, 0)?.with_timezone(&timezone);
                let next = cron.find_next_occurrence(&local, false).ok()?;
                Some(next.timestamp())
            }
            Schedule::Once(at) => (*at > after).then_some(*at),
        }
    }

    /// How it is stored: `every SECS`, `cron PATTERN` or `at UNIX`.
    pub fn stored(&self) -> String {
        match self {
            Schedule::Every(every) => format!("every {}", every.as_secs()),
            Schedule::Cron(pattern, _) => format!("cron {pattern}"),
            Schedule::Once(at) => format!("at {at}"),
        }
    }

    /// A stored schedule read back; `None` for one this gateway cannot read.
    pub fn from_stored(stored: &str) -> Option<Schedule> {
        let (kind, value) = stored.split_once(' ')?;
        match kind {
            "every" => Some(Schedule::Every(Duration::from_secs(value.parse().ok()?))),
            "cron" => Some(Schedule::Cron(
                value.to_owned(),
                Box::new(parse_cron(value).ok()?),
            )),
            "at" => Some(Schedule::Once(value.parse().ok()?)),
            _ => None,
        }
    }

    /// How `/jobs` shows it.
    pub fn describe(&self, timezone: Tz) -> String {
        match self {
            Schedule::Every(every) => format!("every {}", span(every.as_secs())),
            Schedule::Cron(pattern, _) => format!("cron \"{pattern}\""),
            Schedule::Once(at) => format!("once, {}", local_time(*at, timezone)),
        }
    }

    /// The shortest time between two runs: for cron, between its next two.
    fn shortest_gap(&self, rules: &Rules) -> Duration {
        match self {
            Schedule::Every(every) => *every,
            Schedule::Cron(..) => {
                let first = self.next_after(rules.now, rules.timezone);
                let second = first.and_then(|at| self.next_after(at, rules.timezone));
                match (first, second) {
                    (Some(first), Some(second)) => Duration::from_secs((second - first) as u64),
                    _ => Duration::MAX,
                }
            }
            Schedule::Once(_) => Duration::MAX,
        }
    }
}

/// A time as the chat's clock shows it: `Fri 24 Dec 09:00`.
pub fn local_time(at: i64, timezone: Tz) -> String {
    match DateTime::from_timestamp(at, 0) {
        Some(time) => time
            .with_timezone(&timezone)
            .format("%a %-d %b %H:%M")
            .to_string(),
        None => at.to_string(),
    }
}

/// A duration as `1 d 2 h`, `10 min`, `15 s`.
pub fn span(secs: u64) -> String {
    let parts = [(86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")];
    let mut left = secs;
    let mut shown = Vec::new();
    for (unit, name) in parts {
        if left >= unit {
            shown.push(format!("{} {name}", left / unit));
            left %= unit;
        }
    }
    match shown.is_empty() {
        true => "0 s".into(),
        false => shown.join(" "),
    }
}

fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    text.split_once(char::is_whitespace).unwrap_or((text, ""))
}

/// Five fields only: seconds and years are refused, as in crontab.
fn parse_cron(pattern: &str) -> Result<Cron, ScheduleError> {
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    parser
        .parse(pattern.trim())
        .map_err(|error| ScheduleError::BadCron {
            pattern: pattern.trim().to_owned(),
            why: error.to_string(),
        })
}

/// Why a span of time was not taken.
enum Span {
    Unreadable,
    TooLong,
}

/// `15s`, `10m`, `2h`, `1d`, or several (`1h30m`); more than a year is refused.
fn parse_duration(text: &str) -> Result<Duration, Span> {
    let mut total: u64 = 0;
    let mut rest = text.to_ascii_lowercase();
    if rest.is_empty() {
        return Err(Span::Unreadable);
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or(Span::Unreadable)?;
        // Digits beyond u64 are a span far too long, not a typo.
        let number: u64 = rest[..digits].parse().map_err(|_| match digits {
            0 => Span::Unreadable,
            _ => Span::TooLong,
        })?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = match &rest[digits..digits + unit_len] {
            "s" | "sec" | "secs" => 1,
            "m" | "min" | "mins" => 60,
            "h" | "hr" | "hrs" => 3_600,
            "d" | "day" | "days" => 86_400,
            _ => return Err(Span::Unreadable),
        };
        let span = number.saturating_mul(unit);
        total = total.saturating_add(span);
        rest = rest[digits + unit_len..].to_owned();
    }
    match total {
        0 => Err(Span::Unreadable),
        total if total > MAX_SPAN_SECS => Err(Span::TooLong),
        total => Ok(Duration::from_secs(total)),
    }
}

fn parse_clock(text: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(text, "%H:%M").ok()
}

/// The next time the zone's clock shows `clock`: today, or tomorrow once it has passed.
fn next_clock_time(clock: NaiveTime, rules: &Rules) -> i64 {
    let today = DateTime::from_timestamp(rules.now, 0)
        .unwrap_or_default()
        .with_timezone(&rules.timezone)
        .date_naive();
    let at = unix_of(today.and_time(clock), rules.timezone);
    match at > rules.now {
        true => at,
        false => unix_of(
            today.succ_opt().unwrap_or(today).and_time(clock),
            rules.timezone,
        ),
    }
}

/// A wall-clock time in the zone as unix seconds: the earlier of a time shown twice (the
/// clocks went back), an hour on for one never shown (they went forward).
fn unix_of(local: NaiveDateTime, timezone: Tz) -> i64 {
    match timezone.from_local_datetime(&local) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => at.timestamp(),
        LocalResult::None => {
            let later = local + chrono::Duration::hours(1);
            let at = timezone.from_local_datetime(&later).earliest();
            at.map_or_else(|| later.and_utc().timestamp(), |at| at.timestamp())
        }
    }
}

/// The zone named in the config (an IANA name such as `Europe/Berlin`).
pub fn timezone(name: &str) -> Option<Tz> {
    name.parse().ok()
}

/// Unix seconds for a UTC wall-clock time, for tests and docs.
#[cfg(test)]
fn utc(text: &str) -> i64 {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
        .unwrap()
        .and_utc()
        .timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(now: &str, zone: &str) -> Rules {
        Rules {
            now: utc(now),
            timezone: timezone(zone).unwrap(),
            min_interval: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_cron_patterns_next_run_follows_the_zones_clock_across_dst() {
        // (pattern, zone, now in UTC, next run in UTC)
        let cases = [
            ("0 9 * * 1-5", "UTC", "2026-12-04 08:59", "2026-12-04 09:00"),
            // A Friday after 9: the next weekday is Monday.
            ("0 9 * * 1-5", "UTC", "2026-12-04 09:00", "2026-12-07 09:00"),
            // 9:00 in Berlin is 8:00 UTC in winter, 7:00 UTC in summer.
            (
                "0 9 * * *",
                "Europe/Berlin",
                "2026-03-28 09:00",
                "2026-03-29 07:00",
            ),
            (
                "0 9 * * *",
                "Europe/Berlin",
                "2026-10-24 08:00",
                "2026-10-25 08:00",
            ),
            // 02:30 does not exist in Berlin on 29 March 2026 (02:00 -> 03:00): croner
            // runs it at 03:00 local, when the clock jumps, not a day late.
            (
                "30 2 * * *",
                "Europe/Berlin",
                "2026-03-29 00:00",
                "2026-03-29 01:00",
            ),
            // 02:30 comes twice on 25 October 2026 (03:00 -> 02:00): the first is taken...
            (
                "30 2 * * *",
                "Europe/Berlin",
                "2026-10-24 23:00",
                "2026-10-25 00:30",
            ),
            // ...and the second is not run again.
            (
                "30 2 * * *",
                "Europe/Berlin",
                "2026-10-25 00:30",
                "2026-10-26 01:30",
            ),
            (
                "*/15 * * * *",
                "America/New_York",
                "2026-12-04 10:07",
                "2026-12-04 10:15",
            ),
        ];
        for (pattern, zone, now, expected) in cases {
            let rules = rules(now, zone);
            let (schedule, _) = parse_every(&format!("\"{pattern}\" go"), &rules).unwrap();
            let next = schedule.next_after(rules.now, rules.timezone);
            assert_eq!(next, Some(utc(expected)), "{pattern} in {zone} after {now}");
        }
    }

    #[test]
    fn times_and_intervals_are_read_as_typed() {
        let rules = rules("2026-12-04 15:00", "Europe/Berlin"); // 16:00 in Berlin
        let at = |text: &'static str| {
            parse_at(text, &rules).map(|(s, p)| (s.next_after(0, rules.timezone), p))
        };
        assert_eq!(
            at("17:30 check it"),
            Ok((Some(utc("2026-12-04 16:30")), "check it"))
        );
        assert_eq!(
            at("09:00 morning"),
            Ok((Some(utc("2026-12-05 08:00")), "morning"))
        );
        assert_eq!(at("in 2h see"), Ok((Some(utc("2026-12-04 17:00")), "see")));
        assert_eq!(
            at("2026-12-24 09:00 presents"),
            Ok((Some(utc("2026-12-24 08:00")), "presents"))
        );
        assert_eq!(
            at("2025-01-01 09:00 x"),
            Err(ScheduleError::Past("2025-01-01 09:00".into()))
        );
        assert_eq!(at("25:00 x"), Err(ScheduleError::BadTime("25:00".into())));
        assert_eq!(at("17:30"), Err(ScheduleError::NoPrompt));

        let every = |text: &'static str| parse_every(text, &rules).map(|(s, p)| (s.stored(), p));
        assert_eq!(every("10m check CI"), Ok(("every 600".into(), "check CI")));
        assert_eq!(every("1h30m x"), Ok(("every 5400".into(), "x")));
        assert_eq!(every("1d x"), Ok(("every 86400".into(), "x")));
        assert_eq!(
            every("15s x"),
            Err(ScheduleError::TooOften { min_secs: 60 })
        );
        assert_eq!(
            every("soon x"),
            Err(ScheduleError::BadInterval("soon".into()))
        );
        assert_eq!(every("0m x"), Err(ScheduleError::BadInterval("0m".into())));
        for too_long in ["1000000d", "367d", "99999999999999999999999s"] {
            let said = parse_every(&format!("{too_long} x"), &rules).map(|(s, _)| s.stored());
            assert_eq!(said, Err(ScheduleError::TooLong(too_long.into())));
        }
        assert_eq!(every("366d x"), Ok(("every 31622400".into(), "x")));
        assert_eq!(
            at("in 400d x"),
            Err(ScheduleError::TooLong("in 400d".into()))
        );
        assert_eq!(every("10m"), Err(ScheduleError::NoPrompt));
        assert_eq!(every("\"* * * * *\" x"), Ok(("cron * * * * *".into(), "x")));
        let four_fields = every("\"0 9 * *\" x").unwrap_err().to_string();
        assert!(four_fields.contains("five-field"), "{four_fields}");
        assert_eq!(every("\"0 9 * * 1-5 x"), Err(ScheduleError::UnclosedQuote));
        assert!(matches!(
            every("\"0 0 9 * * 1\" x"),
            Err(ScheduleError::BadCron { .. })
        ));
    }

    #[test]
    fn a_schedule_reads_back_as_stored() {
        let rules = rules("2026-12-04 15:00", "UTC");
        for typed in ["15m x", "\"0 9 * * 1-5\" x"] {
            let (schedule, _) = parse_every(typed, &rules).unwrap();
            let back = Schedule::from_stored(&schedule.stored()).unwrap();
            assert_eq!(back.stored(), schedule.stored());
            assert_eq!(
                back.next_after(rules.now, rules.timezone),
                schedule.next_after(rules.now, rules.timezone)
            );
        }
        let once = Schedule::Once(utc("2026-12-05 09:00"));
        assert_eq!(
            once.next_after(rules.now, rules.timezone),
            Some(utc("2026-12-05 09:00"))
        );
        assert_eq!(
            once.next_after(utc("2026-12-05 09:00"), rules.timezone),
            None
        );
        assert!(Schedule::from_stored("hourly").is_none());
        // 30 February: croner gives up rather than searching for ever.
        let (never, _) = parse_every("\"0 0 30 2 *\" x", &rules).unwrap();
        assert_eq!(never.next_after(rules.now, rules.timezone), None);
        assert_eq!(span(5400), "1 h 30 min");
        assert_eq!(
            local_time(utc("2026-12-24 08:00"), timezone("Europe/Berlin").unwrap()),
            "Thu 24 Dec 09:00"
        );
    }
}
