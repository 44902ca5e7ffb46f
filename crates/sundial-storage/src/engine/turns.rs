//! Turns: the order in which writes append to the WAL and apply to the memtable, kept after
//! `write_lock` is released.
//!
//! A write resolves its rows' names under `write_lock` (creating series, which every later write then
//! sees) and takes the next [`Ticket`] there. It encodes its WAL record outside every lock, then, at its
//! [`Turn`], appends that record and applies its rows to the active memtable. So:
//! - records reach the WAL in the order their catalog entries were made: a record never uses a series
//!   or column that only a later record creates, and replay applies them in that order;
//! - the memtable applies rows in the WAL's order: the last write of a (series, timestamp) wins in the
//!   memtable as it does at replay.
//!
//! Why: with the whole write under `write_lock`, one request's encoding, WAL append and memtable apply
//! kept the next request's resolve waiting. While loading TSBS with two client workers the server used
//! 1.1-1.5 of the 2 cores (scenarios 1-4, `bench/results/2026-11-26-epyc7` and `-epyc11`): a second
//! request in flight had nothing to run. Now one request's resolve runs beside the other's encode and
//! apply.
//!
//! Whatever else needs no write between its ticket and the end of its turn (a freeze, a drop, a
//! delete, the catalog.log rewrite) takes `write_lock`, so that no ticket is issued, and waits for the
//! issued ones ([`Turns::drain`]).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex, MutexGuard};

#[derive(Default)]
pub(super) struct Turns {
    /// Tickets issued (the next one's number); changed only under `write_lock`.
    issued: AtomicU64,
    /// The ticket whose turn it is: every earlier one's turn has ended.
    next: Mutex<u64>,
    turn_ended: Condvar,
}

impl Turns {
    /// The next ticket. `_w` proves `write_lock` is held: tickets follow the order of resolves.
    pub(super) fn ticket(&self, _w: &MutexGuard<'_, ()>) -> Ticket<'_> {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        Ticket { turns: self, n, used: false }
    }

    /// Waits until the turn of every ticket issued so far has ended. `_w` proves `write_lock` is held,
    /// so none is issued meanwhile: on return no write is between its ticket and the end of its turn.
    pub(super) fn drain(&self, _w: &MutexGuard<'_, ()>) {
        let issued = self.issued.load(Ordering::SeqCst);
        let mut next = self.next.lock();
        while *next < issued {
            self.turn_ended.wait(&mut next);
        }
    }

    fn wait_for(&self, n: u64) {
        let mut next = self.next.lock();
        while *next != n {
            debug_assert!(*next < n, "turn {n} waited for after it passed ({})", *next);
            self.turn_ended.wait(&mut next);
        }
    }

    fn end(&self, n: u64) {
        let mut next = self.next.lock();
        assert_eq!(*next, n, "a turn ended out of order");
        *next = n + 1;
        self.turn_ended.notify_all();
    }
}

/// A place in the order of writes. Dropped unused (a panic between ticket and turn), it still waits
/// for its turn and passes it on, so later writes are not stuck behind it.
pub(super) struct Ticket<'a> {
    turns: &'a Turns,
    n: u64,
    used: bool,
}

impl<'a> Ticket<'a> {
    /// Waits until every earlier ticket's turn has ended; the turn ends when the [`Turn`] is dropped.
    pub(super) fn wait(mut self) -> Turn<'a> {
        self.used = true;
        self.turns.wait_for(self.n);
        Turn { turns: self.turns, n: self.n }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.turns.wait_for(self.n);
            self.turns.end(self.n);
        }
    }
}

/// A write's turn: while it lives no other write appends to the WAL or applies to the memtable, and
/// none that took its ticket later has started to.
pub(super) struct Turn<'a> {
    turns: &'a Turns,
    n: u64,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.end(self.n);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn turns_follow_tickets_whatever_order_their_holders_arrive_in() {
        let (turns, lock, order) = (Turns::default(), Mutex::new(()), Mutex::new(Vec::new()));
        let tickets: Vec<Ticket<'_>> = (0..8).map(|_| turns.ticket(&lock.lock())).collect();
        std::thread::scope(|s| {
            for (i, t) in tickets.into_iter().enumerate() {
                let order = &order;
                s.spawn(move || {
                    // The last ticket's holder arrives first.
                    std::thread::sleep(Duration::from_millis(3 * (8 - i as u64)));
                    let turn = t.wait();
                    order.lock().push(i);
                    drop(turn);
                });
            }
        });
        assert_eq!(*order.lock(), (0..8).collect::<Vec<_>>());
        turns.drain(&lock.lock());
    }

    #[test]
    fn a_ticket_dropped_unused_passes_its_turn_on() {
        let (turns, lock) = (Turns::default(), Mutex::new(()));
        let first = turns.ticket(&lock.lock());
        let second = turns.ticket(&lock.lock());
        std::thread::scope(|s| {
            let waiter = s.spawn(|| drop(second.wait()));
            std::thread::sleep(Duration::from_millis(20));
            assert!(!waiter.is_finished(), "the second turn came before the first ended");
            drop(first);
        });
        assert_eq!(*turns.next.lock(), 2);
        let w = lock.lock();
        turns.drain(&w);
    }
}
