//! Which transcript messages (by their row's `seq`) a host sharing a
//! PostgreSQL store has read, so that after a reconnect it replays exactly
//! the ones no notification brought.
//!
//! `seq` is taken when a row is inserted, not when it commits: a message can
//! commit after one with a higher `seq` has been read. So besides the highest
//! `seq` read, the `seq`s below it not read yet are kept as gaps; a replay asks
//! for those and for everything above the highest. A gap that never fills (an
//! insert rolled back) stays until [`MAX_GAPS`] newer gaps push it out.

use std::collections::BTreeSet;

/// The most gaps kept; past it the oldest are forgotten.
pub(crate) const MAX_GAPS: usize = 64;

/// The messages read, as the highest `seq` and the gaps below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MessageSeqs {
    highest: i64,
    gaps: BTreeSet<i64>,
}

/// What a replay reads: the gaps, and every row above `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replay {
    pub(crate) gaps: Vec<i64>,
    pub(crate) after: i64,
}

impl MessageSeqs {
    /// At start-up: `highest` is the highest `seq` in the table, `recent` the
    /// `seq`s present among the [`MAX_GAPS`] below it. The missing ones are
    /// gaps (rows that may still commit, or never will).
    pub(crate) fn starting_at(highest: i64, recent: impl IntoIterator<Item = i64>) -> Self {
        let lowest = (highest - MAX_GAPS as i64).max(1);
        let mut gaps: BTreeSet<i64> = (lowest..highest).collect();
        for seq in recent {
            gaps.remove(&seq);
        }
        Self { highest, gaps }
    }

    /// The row `seq` was read (from a notification, a replay, or this host's
    /// own write).
    pub(crate) fn read(&mut self, seq: i64) {
        if seq > self.highest {
            // Only the newest MAX_GAPS seqs skipped can become gaps.
            let first_gap = (self.highest + 1).max(seq - MAX_GAPS as i64);
            self.gaps.extend(first_gap..seq);
            self.highest = seq;
            while self.gaps.len() > MAX_GAPS {
                self.gaps.pop_first();
            }
        } else {
            self.gaps.remove(&seq);
        }
    }

    /// What to read after a reconnect.
    pub(crate) fn replay(&self) -> Replay {
        Replay {
            gaps: self.gaps.iter().copied().collect(),
            after: self.highest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_in_order_leave_no_gap_and_a_replay_reads_only_what_follows() {
        let mut seqs = MessageSeqs::starting_at(3, [1, 2, 3]);
        for seq in 4..=10 {
            seqs.read(seq);
        }
        assert_eq!(
            seqs.replay(),
            Replay {
                gaps: vec![],
                after: 10
            }
        );
    }

    #[test]
    fn a_row_that_commits_after_a_later_one_is_replayed_until_it_is_read() {
        let mut seqs = MessageSeqs::starting_at(0, []);
        seqs.read(1);
        seqs.read(3);
        assert_eq!(
            seqs.replay(),
            Replay {
                gaps: vec![2],
                after: 3
            }
        );
        seqs.read(2);
        assert_eq!(
            seqs.replay(),
            Replay {
                gaps: vec![],
                after: 3
            }
        );
    }

    #[test]
    fn at_start_up_the_seqs_missing_just_below_the_highest_are_gaps() {
        let seqs = MessageSeqs::starting_at(100, [100, 98, 97, 60, 20]);
        let replay = seqs.replay();
        assert_eq!(replay.after, 100);
        assert_eq!(replay.gaps.len(), MAX_GAPS - 3);
        assert_eq!(replay.gaps.first(), Some(&(100 - MAX_GAPS as i64)));
        assert!(replay.gaps.contains(&99) && !replay.gaps.contains(&98));
        assert!(MessageSeqs::starting_at(0, []).replay().gaps.is_empty());
        assert_eq!(MessageSeqs::starting_at(2, [2]).replay().gaps, vec![1]);
    }

    #[test]
    fn gaps_are_bounded_the_oldest_forgotten_first() {
        let mut seqs = MessageSeqs::starting_at(0, []);
        seqs.read(10_000);
        let replay = seqs.replay();
        assert_eq!(replay.gaps.len(), MAX_GAPS);
        assert_eq!(replay.gaps.first(), Some(&(10_000 - MAX_GAPS as i64)));
        for seq in (10_002..10_200).step_by(2) {
            seqs.read(seq);
        }
        let replay = seqs.replay();
        assert_eq!(replay.gaps.len(), MAX_GAPS);
        assert_eq!(replay.gaps.last(), Some(&10_197));
        assert_eq!(replay.after, 10_198);
    }
}
