//! Messages held back by the account's usage limit. A turn the limit stopped tells the
//! chat when the limit resets; its message, and any message for Codex sent meanwhile,
//! waits (in the durable inbox too, so a restart keeps the time) and runs by itself, in
//! order, once that time has come. `/stop` cancels them.

use std::collections::VecDeque;
use std::time::Duration;

use tracing::{error, info, warn};

use super::{Actor, ActorMsg, for_codex};
use crate::clock::unix_now;
use crate::router::replies::Replies;
use crate::router::texts;
use crate::router::turn::TurnOutcome;
use chat::{Inbound, OutboundKind, Stage, Step};
use codex::RateLimits;

/// When Codex did not say when the limit resets, the message is tried again this soon.
const UNREPORTED_RESET_RETRY_SECS: i64 = 15 * 60;

/// The chat's messages waiting for the limit, each with the time it may run.
#[derive(Default)]
pub(super) struct Held {
    messages: VecDeque<(i64, Inbound)>,
    /// Until when the limit holds, as last reported: new messages for Codex wait too.
    limit_until: Option<i64>,
    /// Set by a turn the limit stopped: its message is to be held until then.
    hit: Option<i64>,
}

impl Held {
    pub(super) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The held messages the durable inbox does not keep (at shutdown: they are lost).
    pub(super) fn take_unstored(&mut self) -> Vec<(i64, Inbound)> {
        let (stored, unstored) = self
            .messages
            .drain(..)
            .partition(|(_, m)| m.ticket.is_some());
        self.messages = stored;
        unstored.into()
    }
}

impl Actor {
    /// A turn the usage limit stopped: the chat is told when the limit resets, and the
    /// message that started the turn is held until then (by `serve`).
    pub(super) async fn limit_reached(&mut self, replies: &Replies<'_>, outcome: &TurnOutcome) {
        let now = unix_now();
        let limits = self.session.known_rate_limits();
        let (window_mins, reported) = used_up(limits.as_ref(), now);
        // Codex's windows say when, if its rate-limit headers came; else its message does.
        let named = outcome.limit_resets_at.filter(|at| *at > now);
        let resets_at = reported.or(named);
        let retry_at = resets_at.unwrap_or(now + UNREPORTED_RESET_RETRY_SECS);
        warn!(chat = %self.chat, ?resets_at, retry_at, "the account's usage limit stopped a turn");
        self.ctx.metrics.error("usage_limit");
        if let Err(error) = self.session.record_unanswered().await {
            error!(chat = %self.chat, %error, "could not record the unanswered turn");
        }
        replies.notice(texts::usage_limit_hit(
            window_mins,
            resets_at,
            retry_at,
            now,
        ));
        let summary = texts::work_summary(&outcome.work, outcome.elapsed, false);
        replies.send(OutboundKind::TurnEnded { summary });
        self.held.hit = Some(retry_at);
        self.held.limit_until = Some(retry_at);
    }

    /// Holds `inbound` when it must wait for the limit: it just hit it, it is for Codex
    /// while the limit holds, or it was held before a restart for a time still ahead.
    /// Gives the message back when it need not wait.
    pub(super) async fn hold_if_limited(&mut self, inbound: Inbound) -> Option<Inbound> {
        let now = unix_now();
        let hit = self.held.hit.take();
        let stored = match inbound.ticket.as_ref().map(|t| &t.stage) {
            Some(Stage::Held { until }) if *until > now => Some(*until),
            _ => None,
        };
        let holding = self.held.limit_until.filter(|at| *at > now);
        let (until, tell) = match (hit, stored, holding) {
            (Some(until), _, _) => (until, false), // told with the limit's notice
            _ if !for_codex(&inbound) => return Some(inbound),
            (None, Some(until), _) => (until, false), // told before the restart
            (None, None, Some(until)) => (until, true),
            (None, None, None) => return Some(inbound),
        };
        if tell {
            Replies::to(&inbound).notice(texts::usage_limit_waiting(until, now));
        }
        let mut inbound = inbound;
        if let Some(ticket) = inbound.ticket.as_mut() {
            self.ctx.inbox.advance(ticket, Step::Hold { until }).await;
        }
        info!(chat = %self.chat, until, "message held for the usage limit");
        self.held.messages.push_back((until, inbound));
        self.activity.set_busy(true);
        None
    }

    /// Held messages whose time has come join the queue, in order.
    pub(super) fn release_due(&mut self) {
        let now = unix_now();
        while let Some((until, _)) = self.held.messages.front() {
            if *until > now {
                break;
            }
            let (_, inbound) = self.held.messages.pop_front().expect("a front");
            info!(chat = %self.chat, "usage limit over; running a held message");
            self.queue.push_back(ActorMsg::Inbound(inbound));
        }
    }

    /// How long until the next held message may run.
    pub(super) fn next_release(&self) -> Option<Duration> {
        let (until, _) = self.held.messages.front()?;
        let seconds = (*until - unix_now()).max(0) as u64;
        Some(Duration::from_secs(seconds))
    }

    /// `/stop` with no turn running: cancels the held messages. Returns whether there were
    /// any.
    pub(crate) async fn cancel_held(&mut self, replies: &Replies<'_>) -> bool {
        let held: Vec<_> = self.held.messages.drain(..).collect();
        self.held.limit_until = None;
        for (_, inbound) in &held {
            self.ticket_done(inbound).await;
        }
        if !held.is_empty() {
            info!(chat = %self.chat, messages = held.len(), "held messages cancelled");
            replies.notice(texts::usage_limit_cancelled(held.len()));
        }
        !held.is_empty()
    }
}

/// The used-up window that resets last, and when: the limit lifts then. `(None, None)`
/// when Codex reported no window at 100 % with a reset time.
fn used_up(limits: Option<&RateLimits>, now: i64) -> (Option<i64>, Option<i64>) {
    let windows = limits.into_iter().flat_map(|l| [&l.primary, &l.secondary]);
    let used_up = windows
        .flatten()
        .filter(|w| w.used_percent >= 100)
        .filter_map(|w| Some((w.window_duration_mins, w.resets_at.filter(|at| *at > now)?)))
        .max_by_key(|(_, at)| *at);
    match used_up {
        Some((window, at)) => (window, Some(at)),
        None => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex::RateLimitWindow;

    fn window(used_percent: i64, minutes: i64, resets_at: Option<i64>) -> Option<RateLimitWindow> {
        Some(RateLimitWindow {
            used_percent,
            resets_at,
            window_duration_mins: Some(minutes),
        })
    }

    #[test]
    fn the_limit_lifts_when_the_last_used_up_window_resets() {
        let now = 1_000;
        let cases = [
            ("nothing reported", None, (None, None)),
            (
                "the 5-hour window used up",
                Some((
                    window(100, 300, Some(8_000)),
                    window(40, 10_080, Some(90_000)),
                )),
                (Some(300), Some(8_000)),
            ),
            (
                "both used up: the later reset",
                Some((
                    window(100, 300, Some(8_000)),
                    window(100, 10_080, Some(90_000)),
                )),
                (Some(10_080), Some(90_000)),
            ),
            (
                "used up without a reset time",
                Some((window(100, 300, None), None)),
                (None, None),
            ),
            (
                "a reset already past",
                Some((window(100, 300, Some(500)), None)),
                (None, None),
            ),
        ];
        for (name, windows, expected) in cases {
            let limits = windows.map(|(primary, secondary)| RateLimits { primary, secondary });
            assert_eq!(used_up(limits.as_ref(), now), expected, "{name}");
        }
    }
}
