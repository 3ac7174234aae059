//! Discord's events back in the order Discord sent them. Serenity hands every event to a
//! task of its own, so two events of a burst can overtake each other on their way to the
//! router (a `/new` and the message after it). Message and interaction ids are snowflakes
//! that grow with time: each event waits here for `HOLD`, and leaves in id order.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::router::Router;
use chat::Inbound;

/// Far longer than two tasks of one burst take to start, far shorter than a person types.
const HOLD: Duration = Duration::from_millis(20);

/// Feeds the router in snowflake order. Dropping it hands over what still waits.
pub(super) struct InOrder {
    events: mpsc::UnboundedSender<(u64, Inbound)>,
}

impl InOrder {
    pub(super) fn start(router: Router) -> Self {
        let (events, arriving) = mpsc::unbounded_channel();
        tokio::spawn(release_in_order(arriving, router));
        Self { events }
    }

    /// Hands `inbound`, whose Discord id is `snowflake`, to the router in order.
    pub(super) fn dispatch(&self, snowflake: u64, inbound: Inbound) {
        let _ = self.events.send((snowflake, inbound));
    }
}

async fn release_in_order(mut arriving: mpsc::UnboundedReceiver<(u64, Inbound)>, router: Router) {
    let mut waiting: BTreeMap<u64, (Instant, Inbound)> = BTreeMap::new();
    loop {
        let next_release = waiting.values().map(|(arrived, _)| *arrived + HOLD).min();
        tokio::select! {
            event = arriving.recv() => match event {
                Some((snowflake, inbound)) => {
                    waiting.insert(snowflake, (Instant::now(), inbound));
                }
                None => break,
            },
            () = crate::deadline::sleep_until(next_release) => {
                for inbound in due(&mut waiting, Instant::now()) {
                    router.dispatch(inbound);
                }
            }
        }
    }
    for (_, inbound) in std::mem::take(&mut waiting).into_values() {
        router.dispatch(inbound);
    }
}

/// Takes the events that have waited long enough, and every earlier event with them, in
/// id order.
fn due<T>(waiting: &mut BTreeMap<u64, (Instant, T)>, now: Instant) -> Vec<T> {
    let Some(last_due) = waiting
        .iter()
        .filter(|(_, (arrived, _))| *arrived + HOLD <= now)
        .map(|(snowflake, _)| *snowflake)
        .max()
    else {
        return Vec::new();
    };
    let later = waiting.split_off(&(last_due + 1));
    let released = std::mem::replace(waiting, later);
    released.into_values().map(|(_, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_what_waited_long_enough_in_id_order() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut waiting = BTreeMap::from([
            (30, (at(0), "c")),
            (10, (at(5), "a")),
            (20, (at(1), "b")),
            (40, (at(15), "d")),
        ]);
        assert!(due(&mut waiting, at(19)).is_empty());
        // "c" waited long enough; "a" and "b" came before it, so they leave first.
        assert_eq!(due(&mut waiting, at(20)), ["a", "b", "c"]);
        assert_eq!(due(&mut waiting, at(34)), Vec::<&str>::new());
        assert_eq!(due(&mut waiting, at(35)), ["d"]);
        assert!(waiting.is_empty());
    }
}
