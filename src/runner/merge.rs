//! The interval merger shared by both levels of aggregation: a host merging
//! its engine threads, and the controller merging its hosts. Parts ship
//! intervals in ascending order; an interval is final once every part still
//! alive has shipped it (or ended), and final intervals come out in order.

use std::collections::BTreeMap;

/// Merges intervals from `parts` sources into `T` by a caller-given addition.
pub(super) struct Merger<T> {
    /// interval → (merged so far, latest end in ns)
    pending: BTreeMap<u32, (T, u64)>,
    shipped_to: Vec<Option<u32>>,
    alive: Vec<bool>,
}

impl<T: Default> Merger<T> {
    /// A merger over `parts` sources, all alive.
    pub(super) fn new(parts: usize) -> Self {
        Merger {
            pending: BTreeMap::new(),
            shipped_to: vec![None; parts],
            alive: vec![true; parts],
        }
    }

    /// Part `part` shipped interval `index`, ending at `end_ns`; `add` folds
    /// its data into the interval's accumulator.
    pub(super) fn add(&mut self, part: usize, index: u32, end_ns: u64, add: impl FnOnce(&mut T)) {
        let entry = self
            .pending
            .entry(index)
            .or_insert_with(|| (T::default(), 0));
        add(&mut entry.0);
        entry.1 = entry.1.max(end_ns);
        self.shipped_to[part] = Some(index);
    }

    /// Part `part` will ship nothing more.
    pub(super) fn end(&mut self, part: usize) {
        self.alive[part] = false;
    }

    /// Whether `part` is still expected to ship.
    pub(super) fn is_alive(&self, part: usize) -> bool {
        self.alive[part]
    }

    /// True when no part is alive and nothing is pending.
    pub(super) fn is_done(&self) -> bool {
        self.alive.iter().all(|a| !a) && self.pending.is_empty()
    }

    /// The next final interval `(index, merged, end_ns)`, if any.
    pub(super) fn pop_ready(&mut self) -> Option<(u32, T, u64)> {
        let (&index, _) = self.pending.iter().next()?;
        let missing = self
            .alive
            .iter()
            .zip(&self.shipped_to)
            .any(|(&alive, s)| alive && s.is_none_or(|s| s < index));
        if missing {
            return None;
        }
        let (t, end) = self.pending.remove(&index).expect("entry present");
        Some((index, t, end))
    }

    /// Every pending interval, final or not, in order (the end of a run).
    pub(super) fn pop_any(&mut self) -> Option<(u32, T, u64)> {
        self.pending.pop_first().map(|(i, (t, e))| (i, t, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_only_when_every_live_part_shipped() {
        let mut m: Merger<u64> = Merger::new(2);
        m.add(0, 0, 10, |t| *t += 1);
        assert!(m.pop_ready().is_none());
        m.add(1, 0, 12, |t| *t += 2);
        assert_eq!(m.pop_ready(), Some((0, 3, 12)));
        m.add(0, 1, 20, |t| *t += 4);
        assert!(m.pop_ready().is_none());
        m.end(1);
        assert_eq!(m.pop_ready(), Some((1, 4, 20)));
        m.end(0);
        assert!(m.is_done());
    }
}
