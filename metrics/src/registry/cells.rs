//! One thread's value of a series (a sketch, a counter or a gauge) and how the values of
//! every thread merge into a [`Snapshot`].

use std::sync::Arc;

use super::series::SeriesMeta;
use crate::sketch::DDSketch;

/// One thread's value for a series.
#[derive(Debug, Clone)]
pub(super) enum Cell {
    Dist(Box<DDSketch>),
    Counter(f64),
    /// Value and when it was set (ns since the registry started): the latest wins.
    Gauge(f64, u64),
}

impl Cell {
    pub(super) fn merge_into(&self, acc: &mut Option<Cell>) {
        match (acc, self) {
            (slot @ None, c) => *slot = Some(c.clone()),
            (Some(Cell::Dist(a)), Cell::Dist(b)) => {
                a.merge(b);
            }
            (Some(Cell::Counter(a)), Cell::Counter(b)) => *a += *b,
            (Some(Cell::Gauge(a, at)), Cell::Gauge(b, bt)) if *bt >= *at => {
                *a = *b;
                *at = *bt;
            }
            _ => {}
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct ShardData {
    /// Indexed by series id.
    pub(super) cells: Vec<Option<Cell>>,
}

/// What a series holds at a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Every thread's observations merged into one sketch.
    Distribution(DDSketch),
    /// The sum of every thread's increments.
    Counter(f64),
    /// The value set last, by whichever thread.
    Gauge(f64),
}

/// One series of a [`Snapshot`].
#[derive(Debug, Clone)]
pub struct SeriesSnapshot {
    /// The series' id in its registry, stable for the registry's life (push mode keys
    /// its previous values by it).
    pub id: u32,
    /// Name, tags and kind.
    pub meta: Arc<SeriesMeta>,
    /// The merged value.
    pub value: Value,
}

/// Every series merged across threads, sorted by name then tags.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The series that hold a value.
    pub series: Vec<SeriesSnapshot>,
    /// Distinct series registered.
    pub series_count: usize,
    /// Records dropped because they would have created a series beyond the cap.
    pub dropped: u64,
}

pub(super) fn merge_cells(acc: &mut Vec<Option<Cell>>, cells: &[Option<Cell>]) {
    if acc.len() < cells.len() {
        acc.resize(cells.len(), None);
    }
    for (a, c) in acc.iter_mut().zip(cells) {
        if let Some(c) = c {
            c.merge_into(a);
        }
    }
}
