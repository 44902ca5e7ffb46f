//! The catalog: databases, tables, columns and series, with the tag index.
//!
//! A *series* is a table plus a tag set; it gets a compact `u32` id, dense per table, that segment files
//! store instead of the tag strings. Tag values are interned per tag column (in memory only: their ids
//! never reach the disk), and every (tag column, value) keeps the sorted list of series ids that carry it,
//! so that a tag filter selects series without touching rows.
//!
//! The catalog changes only through [`CatalogEntry`] values, which are applied in order and idempotently:
//! the same entries travel in WAL records (so a crash loses nothing) and are appended to `catalog.log`
//! when the rows that needed them are flushed (see `catalog_log.rs`).

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use crate::FastMap as HashMap;
use crate::error::{Error, Result};
use crate::limits;
use crate::types::FieldType;

pub type DbId = u32;
pub type TableId = u32;
pub type ColId = u16;
pub type SeriesId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnKind {
    Tag,
    Field(FieldType),
}

#[derive(Clone, Debug)]
pub struct ColumnDef {
    pub id: ColId,
    pub name: Arc<str>,
    pub kind: ColumnKind,
}

/// Catalog changes; see the module doc. Ids are assigned by the engine and never reused.
#[derive(Clone, Debug, PartialEq)]
pub enum CatalogEntry {
    CreateDb { db: DbId, name: String, retention_ns: i64 },
    DropDb { db: DbId },
    CreateTable { db: DbId, table: TableId, name: String },
    DropTable { db: DbId, table: TableId },
    AddColumn { db: DbId, table: TableId, col: ColId, name: String, kind: ColumnKind },
    AddSeries { db: DbId, table: TableId, series: SeriesId, tags: SeriesTags },
    SetRetention { db: DbId, retention_ns: i64 },
    /// A delete (see [`crate::tombstone`]). The catalog itself ignores it; the engine keeps tombstones.
    Tombstone(crate::tombstone::Tombstone),
    /// Floors of every counter that must never go back, written at the head of a rewritten
    /// `catalog.log` (see `engine/catalog_rewrite.rs`): the rewrite leaves out dropped objects and
    /// retired tombstones, which were what kept the counters up. Every id allocated after it is at least
    /// its value. The catalog takes `next_db` and `next_table`; the engine takes the rest.
    Counters(Counters),
}

/// A new series' tags as [`CatalogEntry::AddSeries`] carries them: (column, value) pairs, sorted by
/// column when the engine made them (a replayed log is checked, not trusted). The values share one
/// buffer: an entry per new series is made, logged, batched and freed at every series a write creates,
/// and a `String` per tag there was 11 allocations and frees per TSBS series (scenario 5 creates 10 M).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SeriesTags {
    /// Per tag, its column and where its value ends in `text` (it starts where the previous one ended).
    cells: Vec<(ColId, u32)>,
    text: String,
}

impl SeriesTags {
    pub fn with_capacity(tags: usize, bytes: usize) -> SeriesTags {
        SeriesTags { cells: Vec::with_capacity(tags), text: String::with_capacity(bytes) }
    }

    /// Appends a tag. Values are names (at most [`limits::NAME_BYTES_MAX`] bytes) and a series has at
    /// most [`limits::COLUMNS_PER_TABLE_MAX`] tags; a pending series batch (`catalog_log.rs`), which
    /// appends many series' tags to one buffer, stops at `CATALOG_BATCH_TAG_BYTES_MAX`: the buffer
    /// stays far below `u32`.
    pub fn push(&mut self, col: ColId, value: &str) {
        self.text.push_str(value);
        let end = self.text_end();
        self.cells.push((col, end));
    }

    /// Where the text ends, as the `u32` the cells hold.
    fn text_end(&self) -> u32 {
        u32::try_from(self.text.len()).expect("a series' tag bytes fit u32 (names are bounded)")
    }

    /// Appends every tag of `other`, in its order: [`SeriesTags::push`] of each, in one copy of the text.
    pub fn extend_from(&mut self, other: &SeriesTags) {
        let base = self.text_end();
        self.text.push_str(&other.text);
        self.text_end(); // the last end, and so every end below it, fits
        self.cells.extend(other.cells.iter().map(|(col, end)| (*col, base + end)));
    }

    /// The tags' columns, in order.
    pub fn columns(&self) -> impl ExactSizeIterator<Item = ColId> + '_ {
        self.cells.iter().map(|(col, _)| *col)
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Removes every tag, keeping the buffers' capacity.
    pub fn clear(&mut self) {
        self.cells.clear();
        self.text.clear();
    }

    /// Tag `i`'s value (by position).
    pub fn value(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.cells[i - 1].1 as usize };
        &self.text[start..self.cells[i].1 as usize]
    }

    /// Bytes of all values together.
    pub fn value_bytes(&self) -> usize {
        self.text.len()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (ColId, &str)> + Clone + '_ {
        self.range(0..self.len())
    }

    /// Tags `range` (by position), as [`SeriesTags::iter`] yields them.
    pub fn range(&self, range: std::ops::Range<usize>) -> impl ExactSizeIterator<Item = (ColId, &str)> + Clone + '_ {
        range.map(|i| (self.cells[i].0, self.value(i)))
    }

    /// True when the columns strictly ascend (sorted, each once).
    pub fn strictly_ascending(&self) -> bool {
        self.cells.windows(2).all(|w| w[0].0 < w[1].0)
    }
}

impl<S: AsRef<str>> FromIterator<(ColId, S)> for SeriesTags {
    fn from_iter<I: IntoIterator<Item = (ColId, S)>>(iter: I) -> SeriesTags {
        let mut t = SeriesTags::default();
        iter.into_iter().for_each(|(c, v)| t.push(c, v.as_ref()));
        t
    }
}

impl From<Vec<(ColId, String)>> for SeriesTags {
    fn from(v: Vec<(ColId, String)>) -> SeriesTags {
        v.into_iter().collect()
    }
}

impl std::fmt::Debug for SeriesTags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// See [`CatalogEntry::Counters`]. Each field is the *next* value to allocate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub next_db: DbId,
    pub next_table: TableId,
    pub next_tombstone_id: u64,
    pub next_generation: u64,
    /// The WAL's next sequence number when the snapshot was taken.
    pub next_wal_seq: u64,
}

impl Counters {
    /// The larger of each field.
    pub fn max(self, o: Counters) -> Counters {
        Counters {
            next_db: self.next_db.max(o.next_db),
            next_table: self.next_table.max(o.next_table),
            next_tombstone_id: self.next_tombstone_id.max(o.next_tombstone_id),
            next_generation: self.next_generation.max(o.next_generation),
            next_wal_seq: self.next_wal_seq.max(o.next_wal_seq),
        }
    }
}

// Memory layout. The catalog is the one structure that grows with the number of series and lives for
// the whole process, so it is laid out by hand for density (issue 5's budget is 300 resident bytes per
// series at 10 M series): strings and tag sets live in flat arenas indexed by `u32` offsets instead of
// one heap allocation each (an `Arc<str>` costs ≈ 40 bytes beyond its text), and the hash indexes are
// `hashbrown::HashTable`s of bare ids that hash and compare through the arenas (≈ 5–10 bytes a slot,
// where a map from owned keys would store the key a second time).

/// Where item `i` lies in an arena of items stored back to back, given each item's end offset: it
/// starts where item `i − 1` ended.
pub(crate) fn arena_span(ends: &[u32], i: u32) -> std::ops::Range<usize> {
    let start = if i == 0 { 0 } else { ends[i as usize - 1] as usize };
    start..ends[i as usize] as usize
}

/// Hash indexes keep 32 bits of each item's hash beside its id, so that growing a table rehashes from
/// the slots alone: recomputing a hash reads the item's text or tag set from its arena, a cache miss per
/// item that made rehashing the largest single cost of creating series at 10 M (scenario 5's
/// profile: `reserve_rehash` 5 % of server CPU). 4 bytes more per slot.
///
/// The table hashes with [`slot_hash`]`(h32)`, which repeats the 32 bits in both halves, so hashbrown's
/// bucket index (low bits) and control tag (top 7 bits) both come from them.
fn hash32(h: u64) -> u32 {
    (h >> 32) as u32
}

fn slot_hash(h32: u32) -> u64 {
    u64::from(h32) << 32 | u64::from(h32)
}

/// Tags of a series held on the stack while it is added (more spill to the heap): TSBS's series have 10.
const INLINE_TAGS: usize = 12;

/// Interned values of one tag column and, for each value, the series that carry it (ascending ids).
#[derive(Default)]
pub struct TagDict {
    /// Value texts back to back; value `i` ends at `ends[i]` and starts where value `i − 1` ended.
    bytes: String,
    ends: Vec<u32>,
    /// Value ids, hashed by their text, each with its [`hash32`].
    index: hashbrown::HashTable<(u32, u32)>,
    hasher: foldhash::fast::RandomState,
    /// Per value, the one series carrying it (every value of a per-device tag such as `hostname`), or
    /// [`SHARED`] with the position in `lists` of the postings of a value carried by two series or more.
    /// Why not a map from value to postings: a new series adds itself to nine such lists at TSBS's
    /// tags, and hashing into the map was 4 % of the server's CPU creating 10 M series.
    carriers: Vec<u32>,
    lists: Vec<Postings>,
    /// Every value as a shared string, made when a read first asks ([`TagDict::shared_values`]) and
    /// extended when values were added since; `None` until then, and for a dictionary of more than
    /// [`limits::TAG_DICT_SHARED_VALUES_MAX`] values.
    shared: parking_lot::Mutex<Option<Arc<[arcstr::ArcStr]>>>,
}

impl std::fmt::Debug for TagDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TagDict").field("values", &self.len()).field("bytes", &self.bytes.len()).finish()
    }
}

impl TagDict {
    /// Number of distinct values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Every value, in id order.
    pub fn values(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len() as u32).map(|i| self.text(i))
    }

    pub fn id_of(&self, v: &str) -> Option<u32> {
        self.find(v).id()
    }

    /// `v`'s id, or its hash for [`TagDict::add_hashed`] when it is not interned.
    fn find(&self, v: &str) -> ValueLookup {
        self.find_hashed(v, hash32(self.hasher.hash_one(v)))
    }

    /// [`TagDict::find`] of a value whose hash an earlier one gave (`h`).
    fn find_hashed(&self, v: &str, h: u32) -> ValueLookup {
        debug_assert_eq!(h, hash32(self.hasher.hash_one(v)), "value {v:?} looked up with another hash");
        self.index.find(slot_hash(h), |(id, hid)| *hid == h && self.text(*id) == v).map_or(ValueLookup::Absent(h), |(id, _)| ValueLookup::Id(*id))
    }

    pub fn value(&self, id: u32) -> Option<&str> {
        ((id as usize) < self.ends.len()).then(|| self.text(id))
    }

    fn text(&self, id: u32) -> &str {
        &self.bytes[arena_span(&self.ends, id)]
    }

    /// Every value as a shared string, by id (`None` past [`limits::TAG_DICT_SHARED_VALUES_MAX`] values).
    /// Made once and kept: a raw query's answer holds its rows' tags as shared strings, and TSBS's
    /// lastpoint, answering 100 to 4,000 series, spent a tenth of its CPU making and freeing them, every
    /// query again. Values are only ever appended, so ids keep their text; values added since the last
    /// call are made then, the others shared with the previous list.
    pub fn shared_values(&self) -> Option<Arc<[arcstr::ArcStr]>> {
        let n = self.len();
        if n > limits::TAG_DICT_SHARED_VALUES_MAX {
            return None;
        }
        let mut shared = self.shared.lock();
        if let Some(v) = shared.as_ref().filter(|v| v.len() == n) {
            return Some(Arc::clone(v));
        }
        let old: &[arcstr::ArcStr] = shared.as_deref().unwrap_or(&[]);
        debug_assert!(old.len() <= n, "a tag dictionary lost values");
        let kept = old.len().min(n);
        let v: Arc<[arcstr::ArcStr]> = old[..kept].iter().cloned().chain((kept..n).map(|i| arcstr::ArcStr::from(self.text(i as u32)))).collect();
        debug_assert!(v.iter().enumerate().all(|(i, s)| **s == *self.text(i as u32)), "shared values out of step with the values");
        *shared = Some(Arc::clone(&v));
        Some(v)
    }

    /// Series carrying value `id`, ascending.
    pub fn postings(&self, id: u32) -> impl Iterator<Item = SeriesId> + '_ {
        let (sole, list) = match self.carriers.get(id as usize).copied() {
            None => (None, None),
            Some(c) if c & SHARED == 0 => (Some(c), None),
            Some(c) => (None, Some(&self.lists[(c & !SHARED) as usize])),
        };
        sole.into_iter().chain(list.into_iter().flat_map(Postings::iter))
    }

    /// Adds `series` to the carriers of value `id`. Returns the series that carried it alone until now
    /// when this made it shared (see [`TableCatalog::find_series`]).
    fn add_posting(&mut self, id: u32, series: SeriesId) -> Option<SeriesId> {
        let c = &mut self.carriers[id as usize];
        if *c & SHARED != 0 {
            self.lists[(*c & !SHARED) as usize].push(series);
            return None;
        }
        let first = *c;
        if first == series {
            return None;
        }
        let k = u32::try_from(self.lists.len()).ok().filter(|k| k & SHARED == 0).expect("fewer shared values than series");
        *c = SHARED | k;
        let mut list = Postings::new(first);
        list.push(series);
        self.lists.push(list);
        Some(first)
    }

    /// The series that carries value `id` if exactly one does.
    fn sole_carrier(&self, id: u32) -> Option<SeriesId> {
        self.carriers.get(id as usize).copied().filter(|c| c & SHARED == 0)
    }

    /// Errors if adding `v` as a new value would pass [`limits::TAG_VALUE_BYTES_PER_COLUMN_MAX`].
    fn check_room(&self, v: &str) -> Result<u32> {
        let end = self.bytes.len() + v.len();
        u32::try_from(end).ok().filter(|e| (*e as usize) <= limits::TAG_VALUE_BYTES_PER_COLUMN_MAX).ok_or(
            Error::LimitExceeded {
                what: "bytes of distinct values of one tag",
                actual: end as u64,
                limit: limits::TAG_VALUE_BYTES_PER_COLUMN_MAX as u64,
                fix: "a tag holds unbounded values (an id, a timestamp, a message): write it as a field",
            },
        )
    }

    /// The id of `v`, added if new. A new value's postings start with `series`.
    #[cfg(test)]
    fn intern(&mut self, v: &str, series: SeriesId) -> Result<u32> {
        match self.id_of(v) {
            Some(id) => Ok(id),
            None => self.add_value(v, series),
        }
    }

    /// Adds `v`, which the dictionary does not hold, as a value carried by `series`; returns its id.
    #[cfg(test)]
    fn add_value(&mut self, v: &str, series: SeriesId) -> Result<u32> {
        let h = hash32(self.hasher.hash_one(v));
        self.add_hashed(v, h, series)
    }

    /// [`TagDict::add_value`] of a value [`TagDict::find`] just found absent, with the hash it gave
    /// (`h`): a new series' new value (TSBS's `hostname`) was hashed for that lookup already.
    fn add_hashed(&mut self, v: &str, h: u32, series: SeriesId) -> Result<u32> {
        debug_assert!(self.id_of(v).is_none(), "value {v:?} added twice");
        debug_assert_eq!(h, hash32(self.hasher.hash_one(v)), "value {v:?} added with another hash");
        let end = self.check_room(v)?;
        let id = self.ends.len() as u32;
        self.bytes.push_str(v);
        self.ends.push(end);
        assert!(series & SHARED == 0, "series id {series} beyond SERIES_PER_TABLE_MAX");
        self.carriers.push(series);
        self.index.insert_unique(slot_hash(h), (id, h), |(_, h)| slot_hash(*h));
        Ok(id)
    }

    fn shrink_to_fit(&mut self) {
        self.index.shrink_to_fit(|(_, h)| slot_hash(*h));
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.carriers.shrink_to_fit();
        self.lists.shrink_to_fit();
        self.lists.iter_mut().for_each(|p| p.gaps.shrink_to_fit());
    }

    /// Heap bytes held (capacity, not length), for memory reports and tests.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.ends.capacity() * 4
            + self.carriers.capacity() * 4
            + self.index.capacity() * 9
            + self.lists.capacity() * std::mem::size_of::<Postings>()
            + self.lists.iter().map(|p| p.gaps.capacity()).sum::<usize>()
            // Per shared value: its pointer in the list, and its allocation (arcstr's header of length and
            // count, 16 bytes, then the text).
            + self.shared.lock().as_deref().map_or(0, |v| v.iter().map(|s| std::mem::size_of::<arcstr::ArcStr>() + 16 + s.len()).sum::<usize>())
    }
}

/// The series after the first that carry one tag value: each as its distance from the one before, a
/// LEB128 varint. Why not the ids: 4 bytes each, where a value of a tag of few values (TSBS's region,
/// rack, os: nine of its ten tags) is carried by one series in 2 to 100, a distance of one byte; at
/// 10 M series those lists were 360 MB of the catalog's memory (720 as they grew), now about 90. A list
/// is only read whole (a tag filter's series), so decoding from its start costs no lookup.
struct Postings {
    first: SeriesId,
    /// The last series added, where the next distance starts.
    last: SeriesId,
    gaps: Vec<u8>,
}

/// The bit of [`TagDict`]'s `carriers` that marks a value carried by several series: series ids stay
/// below it ([`limits::SERIES_PER_TABLE_MAX`]).
const SHARED: u32 = 1 << 31;
const _: () = assert!(limits::SERIES_PER_TABLE_MAX <= SHARED);

impl Postings {
    fn new(first: SeriesId) -> Postings {
        Postings { first, last: first, gaps: Vec::new() }
    }

    /// Adds `series` (ascending; the last one again is a no-op, as a replayed series is).
    fn push(&mut self, series: SeriesId) {
        if series == self.last {
            return;
        }
        debug_assert!(series > self.last, "series ids arrive in ascending order");
        crate::encoding::put_uvarint(&mut self.gaps, u64::from(series - self.last));
        self.last = series;
    }

    /// Every series of the list, ascending.
    fn iter(&self) -> impl Iterator<Item = SeriesId> + '_ {
        let mut r = crate::encoding::Reader::new(&self.gaps);
        let mut at = self.first;
        std::iter::once(self.first).chain(std::iter::from_fn(move || {
            let gap = r.uvarint()?;
            at += gap as SeriesId;
            Some(at)
        }))
    }
}

/// What a tag column's dictionary answered for a value of a row being resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueLookup {
    /// Interned, with this id.
    Id(u32),
    /// Not interned when asked; the dictionary's hash of it, which adding it takes
    /// ([`TagDict::add_hashed`]).
    Absent(u32),
    /// Not asked.
    Unknown,
}

impl ValueLookup {
    pub fn id(self) -> Option<u32> {
        match self {
            ValueLookup::Id(id) => Some(id),
            ValueLookup::Absent(_) | ValueLookup::Unknown => None,
        }
    }
}

/// One series' tag set: its tag columns ascending and, at the same positions, the interned values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagSetRef<'a> {
    pub cols: &'a [ColId],
    pub vals: &'a [u32],
}

impl<'a> TagSetRef<'a> {
    pub fn iter(self) -> impl Iterator<Item = (ColId, u32)> + 'a {
        self.cols.iter().copied().zip(self.vals.iter().copied())
    }

    pub fn len(&self) -> usize {
        self.cols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }
}

pub struct TableCatalog {
    pub id: TableId,
    pub name: Arc<str>,
    columns: Vec<ColumnDef>,
    by_name: HashMap<Arc<str>, ColId>,
    /// Indexed by column id; `Some` for tag columns.
    dicts: Vec<Option<TagDict>>,
    /// Tag values of every series back to back: series `s` ends at `set_ends[s]` in `set_vals`, under
    /// the columns of shape `set_shape[s]`.
    set_vals: Vec<u32>,
    set_ends: Vec<u32>,
    set_shape: Vec<u32>,
    /// The distinct tag-column lists of the series (a table's series mostly share one): shape `k`'s
    /// columns end at `shape_ends[k]` in `shape_cols`. Why not each series' columns beside its values: 2
    /// bytes a tag, 20 of a TSBS series' 64 in the arenas, 200 MB at 10 M series (400 as the arena grew).
    shape_cols: Vec<ColId>,
    shape_ends: Vec<u32>,
    shape_index: HashMap<Box<[ColId]>, u32>,
    /// Series ids hashed by their tag set, each with its [`hash32`].
    series_index: hashbrown::HashTable<(SeriesId, u32)>,
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for TableCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCatalog")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("columns", &self.columns)
            .field("series", &self.series_count())
            .finish()
    }
}

/// A tag set's hash: the same for a [`TagSetRef`] from the arena and for the pairs of a lookup.
fn hash_tagset(hasher: &foldhash::fast::RandomState, tags: impl Iterator<Item = (ColId, u32)>) -> u64 {
    let mut h = hasher.build_hasher();
    for (c, v) in tags {
        h.write_u16(c);
        h.write_u32(v);
    }
    h.finish()
}

impl TableCatalog {
    fn new(id: TableId, name: &str) -> Self {
        TableCatalog {
            id,
            name: Arc::from(name),
            columns: Vec::new(),
            by_name: HashMap::default(),
            dicts: Vec::new(),
            set_vals: Vec::new(),
            set_ends: Vec::new(),
            set_shape: Vec::new(),
            shape_cols: Vec::new(),
            shape_ends: Vec::new(),
            shape_index: HashMap::default(),
            series_index: hashbrown::HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    pub fn columns(&self) -> &[ColumnDef] {
        &self.columns
    }

    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.by_name.get(name).map(|id| &self.columns[*id as usize])
    }

    pub fn column_by_id(&self, id: ColId) -> Option<&ColumnDef> {
        self.columns.get(id as usize)
    }

    pub fn tag_dict(&self, col: ColId) -> Option<&TagDict> {
        self.dicts.get(col as usize)?.as_ref()
    }

    pub fn series_count(&self) -> usize {
        self.set_ends.len()
    }

    /// The series that carry, for every `(column, values)` constraint, one of its values (ascending,
    /// from the tag index); every series when there is no constraint. A constraint on a column no
    /// series has matches nothing.
    pub fn series_with_tags<V, S>(&self, constraints: impl IntoIterator<Item = (ColId, V)>) -> Vec<SeriesId>
    where
        V: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut selected: Option<Vec<SeriesId>> = None;
        for (col, values) in constraints {
            let Some(dict) = self.tag_dict(col) else { return Vec::new() };
            let mut ids: Vec<SeriesId> =
                values.into_iter().filter_map(|v| dict.id_of(v.as_ref())).flat_map(|id| dict.postings(id)).collect();
            ids.sort_unstable();
            ids.dedup();
            selected = Some(match selected {
                None => ids,
                Some(prev) => prev.into_iter().filter(|s| ids.binary_search(s).is_ok()).collect(),
            });
        }
        selected.unwrap_or_else(|| (0..self.series_count() as SeriesId).collect())
    }

    pub fn series_tags(&self, series: SeriesId) -> Option<TagSetRef<'_>> {
        ((series as usize) < self.set_ends.len()).then(|| self.tagset_at(series))
    }

    fn tagset_at(&self, s: SeriesId) -> TagSetRef<'_> {
        let cols = &self.shape_cols[arena_span(&self.shape_ends, self.set_shape[s as usize])];
        let vals = &self.set_vals[arena_span(&self.set_ends, s)];
        debug_assert_eq!(cols.len(), vals.len(), "series {s}'s values and its shape's columns");
        TagSetRef { cols, vals }
    }

    /// The shape (see `shape_cols`) of these tag columns, added if new: the previous series' shape is
    /// tried first, as a table's series mostly share one.
    fn shape_of(&mut self, cols: impl ExactSizeIterator<Item = ColId> + Clone) -> u32 {
        let last = self.set_shape.last().copied();
        if let Some(k) = last
            && self.shape_cols[arena_span(&self.shape_ends, k)].iter().copied().eq(cols.clone())
        {
            return k;
        }
        let key: Box<[ColId]> = cols.collect();
        if let Some(k) = self.shape_index.get(&key) {
            return *k;
        }
        let k = self.shape_ends.len() as u32;
        self.shape_cols.extend_from_slice(&key);
        self.shape_ends.push(self.shape_cols.len() as u32);
        self.shape_index.insert(key, k);
        k
    }

    /// The dictionary code of tag column `col` for `series` (see [`TableCatalog::tag_dict`]), if the
    /// series has that tag.
    pub fn series_tag_code(&self, series: SeriesId, col: ColId) -> Option<u32> {
        let tags = self.series_tags(series)?;
        let i = tags.cols.binary_search(&col).ok()?;
        Some(tags.vals[i])
    }

    /// The value of tag column `col` for `series`, if the series has that tag.
    pub fn series_tag_value(&self, series: SeriesId, col: ColId) -> Option<&str> {
        self.tag_dict(col)?.value(self.series_tag_code(series, col)?)
    }

    /// The series with exactly this tag set (sorted by column id), if it exists.
    ///
    /// A value that one series alone carries names that series, so only the series without such a value
    /// are in the series index: TSBS's `hostname` is unique per series, and at 10 M new series inserting
    /// each into the index (two cache misses in a table of 10 M slots) was 7 % of the server's CPU, under
    /// the write lock, and 9 bytes of memory a series.
    pub fn find_series(&self, tags: &[(ColId, u32)]) -> Option<SeriesId> {
        let same = |s: SeriesId| {
            let t = self.tagset_at(s);
            t.len() == tags.len() && t.iter().eq(tags.iter().copied())
        };
        if let Some(s) = tags.iter().find_map(|(c, v)| self.tag_dict(*c)?.sole_carrier(*v)) {
            return same(s).then_some(s);
        }
        let h = hash32(hash_tagset(&self.hasher, tags.iter().copied()));
        self.series_index.find(slot_hash(h), |(s, hs)| *hs == h && same(*s)).map(|(s, _)| *s)
    }

    /// Releases spare capacity of every arena and index (after start-up replay, where they grew by
    /// doubling): up to half of the catalog's memory at 10 M series.
    pub fn shrink_to_fit(&mut self) {
        self.set_vals.shrink_to_fit();
        self.set_ends.shrink_to_fit();
        self.set_shape.shrink_to_fit();
        self.series_index.shrink_to_fit(|(_, h)| slot_hash(*h));
        self.dicts.iter_mut().flatten().for_each(TagDict::shrink_to_fit);
    }

    /// Heap bytes the series of this table hold (capacities): tag-set arenas, the series index and the
    /// tag dictionaries.
    pub fn series_heap_bytes(&self) -> usize {
        self.set_vals.capacity() * 4
            + self.set_ends.capacity() * 4
            + self.set_shape.capacity() * 4
            + self.shape_cols.capacity() * 2
            + self.shape_ends.capacity() * 4
            + self.shape_index.keys().map(|k| k.len() * 2 + 24).sum::<usize>()
            + self.series_index.capacity() * 9
            + self.dicts.iter().flatten().map(TagDict::heap_bytes).sum::<usize>()
    }

    fn add_column(&mut self, col: ColId, name: &str, kind: ColumnKind) -> Result<()> {
        if let Some(existing) = self.column(name) {
            return if existing.id == col && existing.kind == kind {
                Ok(())
            } else {
                Err(Error::internal(format!("column {name} replayed with another id or kind")))
            };
        }
        if col as usize != self.columns.len() {
            return Err(Error::internal(format!("column id {col} out of order in table {}", self.name)));
        }
        let name: Arc<str> = Arc::from(name);
        self.columns.push(ColumnDef { id: col, name: name.clone(), kind });
        self.by_name.insert(name, col);
        self.dicts.push(matches!(kind, ColumnKind::Tag).then(TagDict::default));
        Ok(())
    }

    fn dict_mut(&mut self, col: ColId) -> Result<&mut TagDict> {
        self.dicts.get_mut(col as usize).and_then(Option::as_mut).ok_or_else(|| not_a_tag(col))
    }

    /// [`TableCatalog::tag_dict`] of a series' tag column: not one is an internal error.
    fn dict(&self, col: ColId) -> Result<&TagDict> {
        self.tag_dict(col).ok_or_else(|| not_a_tag(col))
    }

    /// The interned tag set of `tags` (column id, value; sorted by column), or `None` if some value was
    /// never interned (then no series carries it). Interns nothing.
    fn lookup_tags(&self, tags: &[(ColId, &str)]) -> Result<Option<Vec<(ColId, u32)>>> {
        let mut set = Vec::with_capacity(tags.len());
        for (col, v) in tags {
            let d = self.dict(*col)?;
            let Some(id) = d.id_of(v) else { return Ok(None) };
            set.push((*col, id));
        }
        Ok(Some(set))
    }

    /// True when a series with exactly these tags (by name, any order) exists.
    fn has_series_named(&self, tags: &[(&str, &str)]) -> bool {
        let Some(mut by_col) = tags.iter().map(|(k, v)| Some((self.column(k)?.id, *v))).collect::<Option<Vec<_>>>() else {
            return false;
        };
        by_col.sort_unstable_by_key(|(c, _)| *c);
        matches!(self.lookup_tags(&by_col), Ok(Some(set)) if self.find_series(&set).is_some())
    }

    /// Adds series `series` with `tags` (sorted by column id); `Ok` without change if it exists already.
    fn add_series(&mut self, series: SeriesId, tags: &[(ColId, &str)]) -> Result<()> {
        if let Some(set) = self.lookup_tags(tags)?
            && let Some(existing) = self.find_series(&set)
        {
            return if existing == series {
                Ok(())
            } else {
                Err(Error::internal(format!("series replayed with id {series}, exists as {existing}")))
            };
        }
        self.insert_series(series, tags.iter().map(|(c, v)| (*c, *v, ValueLookup::Unknown)))
    }

    /// Adds series `series`, whose tag set no series of the table has: `tags` by column id (ascending,
    /// each once), each with what the caller's lookup of its value answered. An [`ValueLookup::Absent`]
    /// must be the answer of a lookup since which the table has not changed (the same lock held
    /// throughout): the value is added without asking again.
    fn insert_series<'v>(
        &mut self,
        series: SeriesId,
        tags: impl ExactSizeIterator<Item = (ColId, &'v str, ValueLookup)> + Clone,
    ) -> Result<()> {
        debug_assert!(tags.clone().zip(tags.clone().skip(1)).all(|(a, b)| a.0 < b.0), "tags sorted by column, each once");
        if series as usize != self.series_count() {
            return Err(Error::internal(format!("series id {series} out of order in table {}", self.name)));
        }
        let tags_total = self.set_vals.len() + tags.len();
        let end = u32::try_from(tags_total).map_err(|_| Error::LimitExceeded {
            what: "tag values of all series of one table",
            actual: tags_total as u64,
            limit: u64::from(u32::MAX),
            fix: "split the series over several tables",
        })?;
        // Check every value before changing anything, so a refused value leaves no half series (nor a
        // value interned for a series that does not exist). The answers are kept on the stack: a
        // vector here, and another for the ids below, were two allocations and frees per new series.
        let mut vals: smallvec::SmallVec<[ValueLookup; INLINE_TAGS]> = smallvec::SmallVec::with_capacity(tags.len());
        for (col, v, known) in tags.clone() {
            let d = self.dict(col)?;
            let found = match known {
                ValueLookup::Unknown => d.find(v),
                k => k,
            };
            if let ValueLookup::Absent(_) = found {
                d.check_room(v)?;
            }
            vals.push(found);
        }
        // A new value is carried by this series alone: then the series is found through it.
        let sole = vals.iter().any(|v| matches!(v, ValueLookup::Absent(_)));
        // Every column is a tag column and every new value has room (checked above); should adding a
        // value fail anyway, the arena is left as it was.
        let at = self.set_vals.len();
        for ((col, v, _), found) in tags.clone().zip(vals) {
            let d = self.dict_mut(col)?;
            let id = match found {
                ValueLookup::Id(id) => {
                    if let Some(was_sole) = d.add_posting(id, series) {
                        self.index_if_no_sole_value(was_sole);
                    }
                    id
                }
                ValueLookup::Absent(h) => match d.add_hashed(v, h, series) {
                    Ok(id) => id,
                    Err(e) => {
                        self.set_vals.truncate(at);
                        return Err(e);
                    }
                },
                ValueLookup::Unknown => unreachable!("every value was looked up above"),
            };
            self.set_vals.push(id);
        }
        let shape = self.shape_of(tags.clone().map(|(c, _, _)| c));
        self.set_ends.push(end);
        self.set_shape.push(shape);
        if !sole {
            self.index_series(series);
        }
        Ok(())
    }

    /// Adds `series` to the series index.
    fn index_series(&mut self, series: SeriesId) {
        let h = hash32(hash_tagset(&self.hasher, self.tagset_at(series).iter()));
        self.series_index.insert_unique(slot_hash(h), (series, h), |(_, h)| slot_hash(*h));
    }

    /// Indexes `series` once the last value only it carried became shared: before that it was found
    /// through such a value, and a series is indexed at most once (values only gain carriers).
    fn index_if_no_sole_value(&mut self, series: SeriesId) {
        let t = self.tagset_at(series);
        if !t.iter().any(|(c, v)| self.tag_dict(c).and_then(|d| d.sole_carrier(v)).is_some()) {
            self.index_series(series);
        }
    }
}

#[derive(Debug)]
pub struct DbCatalog {
    pub id: DbId,
    pub name: Arc<str>,
    /// Retention in nanoseconds; 0 keeps data forever.
    pub retention_ns: i64,
    tables: HashMap<TableId, TableCatalog>,
    by_name: HashMap<Arc<str>, TableId>,
}

impl DbCatalog {
    pub fn table(&self, name: &str) -> Option<&TableCatalog> {
        self.tables.get(self.by_name.get(name)?)
    }

    pub fn table_by_id(&self, id: TableId) -> Option<&TableCatalog> {
        self.tables.get(&id)
    }

    /// Series in all tables of the database.
    pub fn series_count(&self) -> u64 {
        self.tables.values().map(|t| t.series_count() as u64).sum()
    }

    /// Tables sorted by name.
    pub fn tables(&self) -> Vec<&TableCatalog> {
        let mut t: Vec<_> = self.tables.values().collect();
        t.sort_by(|a, b| a.name.cmp(&b.name));
        t
    }
}

/// The whole catalog. Id counters only grow, also across drops, so an id is never reused.
#[derive(Debug, Default)]
pub struct Catalog {
    dbs: HashMap<DbId, DbCatalog>,
    by_name: HashMap<Arc<str>, DbId>,
    next_db: DbId,
    next_table: TableId,
    /// Ids dropped for good. Entries arrive from two logs (catalog.log and the WAL) whose order across a
    /// drop is not fixed: a `CreateTable` still waiting in the WAL is replayed after the `DropTable` that
    /// catalog.log already holds. Ids are never reused, so a create of a dropped id is ignored.
    dropped_dbs: HashSet<DbId>,
    dropped_tables: HashSet<(DbId, TableId)>,
    /// Most series a database may hold (0: no limit); checked when a write creates a series, never at
    /// replay. See [`Catalog::set_series_per_database_max`].
    series_per_database_max: u64,
}

impl Catalog {
    pub fn db(&self, name: &str) -> Option<&DbCatalog> {
        self.dbs.get(self.by_name.get(name)?)
    }

    pub fn db_by_id(&self, id: DbId) -> Option<&DbCatalog> {
        self.dbs.get(&id)
    }

    /// Databases sorted by name.
    pub fn dbs(&self) -> Vec<&DbCatalog> {
        let mut d: Vec<_> = self.dbs.values().collect();
        d.sort_by(|a, b| a.name.cmp(&b.name));
        d
    }

    /// Caps the series of each database (0: no limit), as InfluxDB's `max-series-per-database`: the
    /// catalog is the one memory that grows with series (≈ 135 bytes each, see `catalog.rs`), so a
    /// runaway tag (a request id, a timestamp) is refused with a clear error instead of filling memory.
    /// Series that exist already, also beyond a lowered limit, keep accepting writes.
    pub fn set_series_per_database_max(&mut self, max: u64) {
        self.series_per_database_max = max;
    }

    pub fn next_db_id(&self) -> DbId {
        self.next_db
    }

    pub fn next_table_id(&self) -> TableId {
        self.next_table
    }

    fn table_mut(&mut self, db: DbId, table: TableId) -> Option<&mut TableCatalog> {
        self.dbs.get_mut(&db)?.tables.get_mut(&table)
    }

    /// Applies one entry. Entries for dropped (absent) databases or tables are ignored: they come from WAL
    /// records written before the drop. Re-applying an entry that is already in effect is a no-op.
    pub fn apply(&mut self, e: &CatalogEntry) -> Result<()> {
        match e {
            CatalogEntry::CreateDb { db, name, retention_ns } => {
                self.next_db = self.next_db.max(db + 1);
                if self.dbs.contains_key(db) || self.dropped_dbs.contains(db) {
                    return Ok(());
                }
                let name: Arc<str> = Arc::from(name.as_str());
                let tables = HashMap::default();
                let c = DbCatalog { id: *db, name: name.clone(), retention_ns: *retention_ns, tables, by_name: HashMap::default() };
                self.dbs.insert(*db, c);
                self.by_name.insert(name, *db);
            }
            CatalogEntry::DropDb { db } => {
                self.dropped_dbs.insert(*db);
                if let Some(c) = self.dbs.remove(db) {
                    self.by_name.remove(&c.name);
                }
            }
            CatalogEntry::SetRetention { db, retention_ns } => {
                if let Some(c) = self.dbs.get_mut(db) {
                    c.retention_ns = *retention_ns;
                }
            }
            CatalogEntry::Tombstone(_) => {}
            CatalogEntry::Counters(c) => {
                self.next_db = self.next_db.max(c.next_db);
                self.next_table = self.next_table.max(c.next_table);
            }
            CatalogEntry::CreateTable { db, table, name } => {
                self.next_table = self.next_table.max(table + 1);
                let Some(c) = self.dbs.get_mut(db) else { return Ok(()) };
                if c.tables.contains_key(table) || self.dropped_tables.contains(&(*db, *table)) {
                    return Ok(());
                }
                c.tables.insert(*table, TableCatalog::new(*table, name));
                c.by_name.insert(Arc::from(name.as_str()), *table);
            }
            CatalogEntry::DropTable { db, table } => {
                self.next_table = self.next_table.max(table + 1);
                self.dropped_tables.insert((*db, *table));
                let Some(c) = self.dbs.get_mut(db) else { return Ok(()) };
                if let Some(t) = c.tables.remove(table) {
                    c.by_name.remove(&t.name);
                }
            }
            CatalogEntry::AddColumn { db, table, col, name, kind } => {
                if let Some(t) = self.table_mut(*db, *table) {
                    t.add_column(*col, name, *kind)?;
                }
            }
            CatalogEntry::AddSeries { db, table, series, tags } => {
                if let Some(t) = self.table_mut(*db, *table) {
                    let tags: Vec<(ColId, &str)> = tags.iter().collect();
                    t.add_series(*series, &tags)?;
                }
            }
        }
        Ok(())
    }

    /// Releases the spare capacity of every table's series arenas and indexes; see
    /// [`TableCatalog::shrink_to_fit`].
    pub fn shrink_to_fit(&mut self) {
        self.dbs.values_mut().flat_map(|d| d.tables.values_mut()).for_each(TableCatalog::shrink_to_fit);
    }

    /// Heap bytes held for series by every table; see [`TableCatalog::series_heap_bytes`].
    pub fn series_heap_bytes(&self) -> usize {
        self.dbs.values().flat_map(|d| d.tables.values()).map(TableCatalog::series_heap_bytes).sum()
    }

    /// Every entry needed to rebuild this catalog from nothing, in an order `apply` accepts: each live
    /// database (with its current retention, so no `SetRetention` is needed), table, column and series,
    /// then a `DropTable` for each dropped table of a live database for which `keep_drop` says yes.
    ///
    /// A dropped table's `DropTable` matters only while a WAL record that creates it may still be
    /// replayed (the drop keeps the create from resurrecting the table); the caller knows which.
    /// Dropped databases need none: `CreateDb` never travels in the WAL, and entries of an absent
    /// database are ignored. The id counters are *not* carried by these entries (the highest ids may
    /// belong to dropped objects): the caller writes a [`CatalogEntry::Counters`] too.
    pub fn snapshot_entries(&self, keep_drop: &dyn Fn(DbId, TableId) -> bool) -> Vec<CatalogEntry> {
        let mut out = Vec::with_capacity(self.live_entry_count());
        self.for_each_snapshot_entry(keep_drop, &mut |e| {
            out.push(e);
            Ok(())
        })
        .expect("collecting cannot fail");
        out
    }

    /// [`Catalog::snapshot_entries`] one entry at a time: at millions of series the whole list would
    /// take several times the catalog's own memory (each entry owns its strings).
    pub fn for_each_snapshot_entry(
        &self,
        keep_drop: &dyn Fn(DbId, TableId) -> bool,
        f: &mut dyn FnMut(CatalogEntry) -> Result<()>,
    ) -> Result<()> {
        for db in self.dbs() {
            f(CatalogEntry::CreateDb { db: db.id, name: db.name.to_string(), retention_ns: db.retention_ns })?;
            for t in db.tables() {
                f(CatalogEntry::CreateTable { db: db.id, table: t.id, name: t.name.to_string() })?;
                for c in &t.columns {
                    let (col, name, kind) = (c.id, c.name.to_string(), c.kind);
                    f(CatalogEntry::AddColumn { db: db.id, table: t.id, col, name, kind })?;
                }
                for sid in 0..t.series_count() as SeriesId {
                    let set = t.series_tags(sid).expect("series ids are dense");
                    let tags = set.iter().map(|(c, v)| (c, t.tag_dict(c).and_then(|d| d.value(v)).unwrap_or_default())).collect();
                    f(CatalogEntry::AddSeries { db: db.id, table: t.id, series: sid, tags })?;
                }
            }
        }
        for (db, table) in self.kept_drops(keep_drop) {
            f(CatalogEntry::DropTable { db, table })?;
        }
        Ok(())
    }

    /// The dropped tables of live databases that `keep_drop` keeps, sorted.
    pub fn kept_drops(&self, keep_drop: &dyn Fn(DbId, TableId) -> bool) -> Vec<(DbId, TableId)> {
        let mut tables: Vec<(DbId, TableId)> =
            self.dropped_tables.iter().copied().filter(|(d, t)| self.dbs.contains_key(d) && keep_drop(*d, *t)).collect();
        tables.sort_unstable();
        tables
    }

    /// How many entries [`Catalog::snapshot_entries`] writes for the live objects (not the drops), in
    /// O(tables): the measure of the live part of `catalog.log`.
    pub fn live_entry_count(&self) -> usize {
        self.dbs.values().map(|d| 1 + d.tables.values().map(|t| 1 + t.columns.len() + t.series_count()).sum::<usize>()).sum()
    }
}

/// Resolves the names of one row against the catalog, creating what is missing.
///
/// Used by the write path under the engine's write lock: `lookup` runs under a shared lock and answers
/// most rows; only a row that needs a new table, column or series takes the exclusive lock for `create`.
pub struct Resolver;

/// A row's names resolved to ids.
#[derive(Debug)]
pub struct ResolvedRow {
    pub table: TableId,
    pub series: SeriesId,
    /// Column id and type of each field, in the row's field order: shared with the [`RowShape`] it came
    /// from, as a request's rows mostly have one (a vector per row was an allocation and a free per new
    /// series at TSBS's 10 M hosts).
    pub fields: Arc<[(ColId, FieldType)]>,
}

/// What [`Resolver::lookup`] found for a row.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// The row's table, series and field columns all exist.
    Found(ResolvedRow),
    /// The table and every column exist, with the row's kinds and types, but no series has its tags:
    /// [`Resolver::create_series`] adds it from what the lookup resolved (at TSBS's 1 M and 10 M hosts
    /// every row is a new series, and [`Resolver::create`] resolved each name twice more).
    NewSeries(NewSeries<'a>),
    /// A table or column must be created first: [`Resolver::create`].
    Missing,
}

/// The columns of a row's names ([`Resolver::shape`]): its table, each tag's column in the row's tag
/// order, and each field's column and type in the row's field order.
#[derive(Clone, Debug)]
pub struct RowShape {
    pub table: TableId,
    tag_cols: Vec<ColId>,
    fields: Arc<[(ColId, FieldType)]>,
}

impl RowShape {
    /// The row of `series` (of this shape's table, found by other means) with this shape's fields.
    pub fn row(&self, series: SeriesId) -> ResolvedRow {
        ResolvedRow { table: self.table, series, fields: Arc::clone(&self.fields) }
    }
}

/// A series to add, its names resolved by [`Resolver::lookup`].
#[derive(Debug)]
pub struct NewSeries<'a> {
    table: TableId,
    /// Tags by column id (ascending), each with what its dictionary answered.
    tags: Vec<(ColId, &'a str, ValueLookup)>,
    fields: Arc<[(ColId, FieldType)]>,
}

fn series_per_database_exceeded(db_series: u64, series_max: u64) -> Error {
    Error::LimitExceeded {
        what: "series per database",
        actual: db_series + 1,
        limit: series_max,
        fix: "a tag probably holds unbounded values (write it as a field), or raise \
              --max-series-per-database (0: no limit)",
    }
}

fn not_a_tag(col: ColId) -> Error {
    Error::internal(format!("series tag on non-tag column {col}"))
}

/// Adds to `t` (table `table` of database `db`) a series no series of it has the tags of, and records it
/// in `entries`: `tags` as [`TableCatalog::insert_series`] takes them. Returns its id.
fn new_series<'v>(
    t: &mut TableCatalog,
    db: DbId,
    table: TableId,
    tags: impl ExactSizeIterator<Item = (ColId, &'v str, ValueLookup)> + Clone,
    entries: &mut Vec<CatalogEntry>,
) -> Result<SeriesId> {
    let s = t.series_count() as SeriesId;
    if s >= limits::SERIES_PER_TABLE_MAX {
        return Err(Error::LimitExceeded {
            what: "series per table",
            actual: u64::from(s),
            limit: u64::from(limits::SERIES_PER_TABLE_MAX),
            fix: "drop unused series or split the data over several tables",
        });
    }
    t.insert_series(s, tags.clone())?;
    let mut set = SeriesTags::with_capacity(tags.len(), tags.clone().map(|(_, v, _)| v.len()).sum());
    tags.for_each(|(c, v, _)| set.push(c, v));
    entries.push(CatalogEntry::AddSeries { db, table, series: s, tags: set });
    Ok(s)
}

pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::InvalidName { name: name.to_string(), reason: "names must not be empty" });
    }
    if name.len() > limits::NAME_BYTES_MAX {
        return Err(Error::LimitExceeded {
            what: "name bytes",
            actual: name.len() as u64,
            limit: limits::NAME_BYTES_MAX as u64,
            fix: "use shorter table, tag and field names",
        });
    }
    Ok(())
}

impl Resolver {
    /// The columns a row needs that `t` lacks; errors if the row conflicts with the schema.
    fn new_columns<'a>(
        t: Option<&TableCatalog>,
        table: &str,
        tags: &[(&'a str, &str)],
        fields: &[(&'a str, FieldType)],
    ) -> Result<Vec<(&'a str, ColumnKind)>> {
        let conflict = |name: &str| Error::ColumnKindConflict { table: table.to_string(), name: name.to_string() };
        let mut new_cols: Vec<(&str, ColumnKind)> = Vec::new();
        for (k, v) in tags {
            validate_name(k)?;
            validate_name(v)?;
            match t.and_then(|t| t.column(k)).map(|c| c.kind) {
                Some(ColumnKind::Tag) => {}
                Some(_) => return Err(conflict(k)),
                None => new_cols.push((*k, ColumnKind::Tag)),
            }
        }
        for (k, ty) in fields {
            validate_name(k)?;
            match t.and_then(|t| t.column(k)).map(|c| c.kind) {
                Some(ColumnKind::Tag) => return Err(conflict(k)),
                Some(ColumnKind::Field(existing)) if existing != *ty => {
                    return Err(Error::type_conflict(table, k, *ty, existing));
                }
                Some(_) => {}
                None if new_cols.iter().any(|(n, _)| n == k) => return Err(conflict(k)),
                None => new_cols.push((*k, ColumnKind::Field(*ty))),
            }
        }
        let have = t.map_or(0, |t| t.columns.len());
        if have + new_cols.len() > limits::COLUMNS_PER_TABLE_MAX {
            return Err(Error::LimitExceeded {
                what: "columns per table",
                actual: (have + new_cols.len()) as u64,
                limit: limits::COLUMNS_PER_TABLE_MAX as u64,
                fix: "a value is probably being written as a tag or field key; restructure the data",
            });
        }
        Ok(new_cols)
    }

    /// Answers from the existing catalog, creating nothing.
    pub fn lookup<'a>(
        db: &DbCatalog,
        table: &str,
        tags: &[(&str, &'a str)],
        fields: &[(&str, FieldType)],
    ) -> Result<Lookup<'a>> {
        match Self::shape(db, table, tags, fields)? {
            Some(shape) => Ok(Self::lookup_shaped(db, &shape, tags)),
            None => Ok(Lookup::Missing),
        }
    }

    /// The columns a row's names resolve to, checked against their kinds and types; `None` when a table
    /// or column is missing.
    pub fn shape(db: &DbCatalog, table: &str, tags: &[(&str, &str)], fields: &[(&str, FieldType)]) -> Result<Option<RowShape>> {
        let Some(t) = db.table(table) else { return Ok(None) };
        let mut tag_cols = Vec::with_capacity(tags.len());
        for (k, _) in tags {
            let Some(c) = t.column(k) else { return Ok(None) };
            if c.kind != ColumnKind::Tag {
                return Err(Error::ColumnKindConflict { table: table.to_string(), name: k.to_string() });
            }
            tag_cols.push(c.id);
        }
        let mut out_fields = Vec::with_capacity(fields.len());
        let mut missing = false;
        for (k, ty) in fields {
            match t.column(k) {
                None => missing = true,
                Some(c) => match c.kind {
                    ColumnKind::Tag => {
                        return Err(Error::ColumnKindConflict { table: table.to_string(), name: k.to_string() });
                    }
                    ColumnKind::Field(existing) if existing != *ty => {
                        return Err(Error::type_conflict(table, k, *ty, existing));
                    }
                    ColumnKind::Field(_) => out_fields.push((c.id, *ty)),
                },
            }
        }
        Ok((!missing).then_some(RowShape { table: t.id, tag_cols, fields: out_fields.into() }))
    }

    /// [`Self::lookup`] of a row whose names resolve to `shape` (its tags in the order `shape` was
    /// made from): only the tag values are looked up. A request's rows usually share their names, so
    /// the engine resolves them once per request rather than once per row (ten tag and ten field names
    /// per TSBS row, each hashed and probed, where every row is a new series at 1 M and 10 M hosts).
    pub fn lookup_shaped<'a>(db: &DbCatalog, shape: &RowShape, tags: &[(&str, &'a str)]) -> Lookup<'a> {
        let Some(t) = db.table_by_id(shape.table) else { return Lookup::Missing };
        debug_assert_eq!(shape.tag_cols.len(), tags.len());
        let mut set: Vec<_> =
            shape.tag_cols.iter().zip(tags).map(|(c, (_, v))| (*c, *v, t.tag_dict(*c).map_or(ValueLookup::Unknown, |d| d.find(v)))).collect();
        set.sort_unstable_by_key(|(c, _, _)| *c);
        Self::series_or_new(t, NewSeries { table: t.id, tags: set, fields: Arc::clone(&shape.fields) })
    }

    /// The series of table `t` with `new`'s tags if one has them (every value interned: a value never
    /// interned, no series carries it), else `new`.
    fn series_or_new<'a>(t: &TableCatalog, new: NewSeries<'a>) -> Lookup<'a> {
        let ids: Option<smallvec::SmallVec<[(ColId, u32); INLINE_TAGS]>> = new.tags.iter().map(|(c, _, v)| v.id().map(|v| (*c, v))).collect();
        match ids.and_then(|ids| t.find_series(&ids)) {
            Some(series) => Lookup::Found(ResolvedRow { table: t.id, series, fields: new.fields }),
            None => Lookup::NewSeries(new),
        }
    }

    /// [`Resolver::lookup_shaped`]'s answer again for a row it found new (`new`) under a lock since
    /// released: the values it did not find may have been added since, and the series with them; the
    /// rest stands while the table lives (ids are never reused, a live table's values and columns are
    /// never removed or retyped). `None` when the table is gone: look the row up from its names.
    pub fn lookup_again<'a>(db: &DbCatalog, mut new: NewSeries<'a>) -> Option<Lookup<'a>> {
        let t = db.table_by_id(new.table)?;
        for (c, v, found) in &mut new.tags {
            // The table is the one of the first lookup (ids are never reused), so are its dictionaries
            // and their hashes.
            *found = match (*found, t.tag_dict(*c)) {
                (ValueLookup::Id(id), _) => ValueLookup::Id(id),
                (ValueLookup::Absent(h), Some(d)) => d.find_hashed(v, h),
                (_, d) => d.map_or(ValueLookup::Unknown, |d| d.find(v)),
            };
        }
        Some(Self::series_or_new(t, new))
    }

    /// Adds the series `lookup` (or `lookup_again`) found missing, under the same lock as that lookup
    /// (nothing changed in between: the values it found absent are added without asking again),
    /// recording it in `entries`.
    pub fn create_series(
        cat: &mut Catalog,
        db: DbId,
        new: NewSeries<'_>,
        entries: &mut Vec<CatalogEntry>,
    ) -> Result<ResolvedRow> {
        let (series_max, db_series) = (cat.series_per_database_max, cat.db_by_id(db).map_or(0, DbCatalog::series_count));
        if series_max > 0 && db_series >= series_max {
            return Err(series_per_database_exceeded(db_series, series_max));
        }
        let t = cat.table_mut(db, new.table).ok_or_else(|| Error::internal("table vanished"))?;
        let series = new_series(t, db, new.table, new.tags.iter().copied(), entries)?;
        Ok(ResolvedRow { table: new.table, series, fields: new.fields })
    }

    /// Creates what `lookup` could not find, recording every change in `entries`.
    pub fn create(
        cat: &mut Catalog,
        db: DbId,
        table: &str,
        tags: &[(&str, &str)],
        fields: &[(&str, FieldType)],
        entries: &mut Vec<CatalogEntry>,
    ) -> Result<ResolvedRow> {
        validate_name(table)?;
        let (series_max, db_series) = (cat.series_per_database_max, cat.db_by_id(db).map_or(0, DbCatalog::series_count));
        let existing = cat.db_by_id(db).and_then(|d| d.table(table));
        if series_max > 0 && db_series >= series_max && !existing.is_some_and(|t| t.has_series_named(tags)) {
            // Before anything is created: a refused row leaves no table or column behind.
            return Err(series_per_database_exceeded(db_series, series_max));
        }
        // Validate every column before creating anything, so a rejected row leaves no trace in the schema.
        let new_cols = Self::new_columns(existing, table, tags, fields)?;
        let table_id = match existing {
            Some(t) => t.id,
            None => {
                let e = CatalogEntry::CreateTable { db, table: cat.next_table, name: table.to_string() };
                cat.apply(&e)?;
                entries.push(e);
                cat.next_table - 1
            }
        };
        let t = cat.table_mut(db, table_id).ok_or_else(|| Error::internal("table vanished"))?;
        for (name, kind) in new_cols {
            let col = t.columns.len() as ColId;
            t.add_column(col, name, kind)?;
            entries.push(CatalogEntry::AddColumn { db, table: table_id, col, name: name.to_string(), kind });
        }
        let mut by_col: Vec<(ColId, &str)> = tags.iter().map(|(k, v)| (t.by_name[*k], *v)).collect();
        by_col.sort_unstable_by_key(|(c, _)| *c);
        let series = match t.lookup_tags(&by_col)?.and_then(|set| t.find_series(&set)) {
            Some(s) => s,
            // No series has these tags (just searched): added without `add_series`' second search.
            None => new_series(t, db, table_id, by_col.iter().map(|(c, v)| (*c, *v, ValueLookup::Unknown)), entries)?,
        };
        let fields = fields
            .iter()
            .map(|(k, ty)| (t.by_name[*k], *ty))
            .collect();
        Ok(ResolvedRow { table: table_id, series, fields })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat_with_db() -> Catalog {
        let mut c = Catalog::default();
        c.apply(&CatalogEntry::CreateDb { db: 0, name: "db".into(), retention_ns: 0 }).unwrap();
        c
    }

    /// A dictionary's shared values are its values by id, one list shared between calls, extended
    /// (the old strings kept) when values are added; past the limit it keeps none.
    #[test]
    fn tag_dict_shares_its_values() {
        let mut d = TagDict::default();
        assert_eq!(d.shared_values().as_deref(), Some(&[][..]));
        for (i, v) in ["eu", "us", "eu", "ap"].iter().enumerate() {
            d.intern(v, i as SeriesId).unwrap();
        }
        let a = d.shared_values().unwrap();
        assert_eq!(a.iter().map(|s| &**s).collect::<Vec<_>>(), ["eu", "us", "ap"]);
        assert!(Arc::ptr_eq(&a, &d.shared_values().unwrap()), "made once");
        d.intern("sa", 9).unwrap();
        let b = d.shared_values().unwrap();
        assert_eq!(b.iter().map(|s| &**s).collect::<Vec<_>>(), ["eu", "us", "ap", "sa"]);
        assert!(a.iter().zip(b.iter()).all(|(x, y)| arcstr::ArcStr::ptr_eq(x, y)), "the earlier strings are kept");
        assert!(d.heap_bytes() > 4 * 32, "the shared strings are counted");

        let mut big = TagDict::default();
        for i in 0..=limits::TAG_DICT_SHARED_VALUES_MAX {
            big.intern(&format!("h{i}"), i as SeriesId).unwrap();
        }
        assert!(big.shared_values().is_none());
    }

    /// Postings come back as added, over distances of one byte and of several, a series added twice in
    /// a row once; a value of one series has only it, an unknown id none.
    #[test]
    fn postings_keep_every_series_at_any_distance() {
        let mut d = TagDict::default();
        let want: Vec<SeriesId> = vec![3, 4, 130, 131, 20_000, 3_000_000, u32::MAX - 1];
        let eu = d.intern("eu", want[0]).unwrap();
        for s in &want {
            d.add_posting(eu, *s);
            d.add_posting(eu, *s);
        }
        let us = d.intern("us", 7).unwrap();
        d.add_posting(us, 7);
        assert_eq!(d.postings(eu).collect::<Vec<_>>(), want);
        assert_eq!(d.postings(us).collect::<Vec<_>>(), [7]);
        assert_eq!(d.postings(9).count(), 0);
    }

    #[test]
    fn creates_then_finds_series_and_replays_identically() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        let tags = [("host", "a"), ("region", "eu")];
        let fields = [("v", FieldType::Float)];
        let r = Resolver::create(&mut c, 0, "cpu", &tags, &fields, &mut entries).unwrap();
        assert_eq!(r.series, 0);
        let again = Resolver::lookup(c.db("db").unwrap(), "cpu", &[("region", "eu"), ("host", "a")], &fields).unwrap();
        assert_eq!(found(again), Some(0));
        let other = Resolver::create(&mut c, 0, "cpu", &[("host", "b")], &fields, &mut entries).unwrap();
        assert_eq!(other.series, 1);

        let mut replayed = cat_with_db();
        for e in &entries {
            replayed.apply(e).unwrap();
            replayed.apply(e).unwrap(); // idempotent
        }
        let t = replayed.db("db").unwrap().table("cpu").unwrap();
        assert_eq!(t.series_count(), 2);
        let host = t.column("host").unwrap().id;
        assert_eq!(t.series_tag_value(1, host), Some("b"));
        let d = t.tag_dict(host).unwrap();
        assert_eq!(d.postings(d.id_of("a").unwrap()).collect::<Vec<_>>(), [0]);
    }

    /// Series of one table with different tag columns, interleaved, each keep their own columns (a
    /// shape per column list, shared by the series that have it), live and after replay.
    #[test]
    fn series_of_several_tag_column_lists_keep_their_own() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        let fields = [("v", FieldType::Float)];
        let sets: [&[(&str, &str)]; 5] = [
            &[("host", "a"), ("region", "eu")],
            &[("host", "b")],
            &[("host", "c"), ("region", "us")],
            &[("rack", "1"), ("region", "us")],
            &[("host", "b"), ("rack", "1")],
        ];
        for (i, tags) in sets.iter().enumerate() {
            assert_eq!(Resolver::create(&mut c, 0, "cpu", tags, &fields, &mut entries).unwrap().series, i as SeriesId);
        }
        let mut replayed = cat_with_db();
        for e in &entries {
            replayed.apply(e).unwrap();
        }
        for cat in [&c, &replayed] {
            let t = cat.db("db").unwrap().table("cpu").unwrap();
            assert_eq!(t.shape_ends.len(), 4, "shapes: host+region, host, rack+region, host+rack");
            for (i, tags) in sets.iter().enumerate() {
                let mut want: Vec<(ColId, &str)> = tags.iter().map(|(k, v)| (t.column(k).unwrap().id, *v)).collect();
                want.sort_unstable();
                let got: Vec<(ColId, &str)> =
                    t.series_tags(i as SeriesId).unwrap().iter().map(|(col, code)| (col, t.tag_dict(col).unwrap().value(code).unwrap())).collect();
                assert_eq!(got, want, "series {i}");
                let again = Resolver::lookup(cat.db("db").unwrap(), "cpu", tags, &fields).unwrap();
                assert_eq!(found(again), Some(i as SeriesId));
            }
            assert_eq!(found(Resolver::lookup(cat.db("db").unwrap(), "cpu", &[("host", "a")], &fields).unwrap()), None);
        }
    }

    /// TSBS cpu-only's tag set: a unique `hostname` and nine tags of few values.
    fn tsbs_tags(i: u32) -> Vec<(String, String)> {
        let mut t = vec![("hostname".to_string(), format!("host_{i}"))];
        for (k, n) in [("region", 9), ("datacenter", 40), ("rack", 100), ("os", 3), ("arch", 2), ("team", 4)] {
            t.push((k.to_string(), format!("{k}_{}", i % n)));
        }
        for (k, n) in [("service", 20), ("service_version", 2), ("service_environment", 3)] {
            t.push((k.to_string(), format!("{}", (i / 7) % n)));
        }
        t
    }

    #[test]
    fn postings_grow_from_one_series_to_many_and_lookups_survive_replay() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        let f = [("v", FieldType::Float)];
        for i in 0..300u32 {
            let tags = tsbs_tags(i);
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert_eq!(Resolver::create(&mut c, 0, "cpu", &tags, &f, &mut entries).unwrap().series, i);
        }
        let mut replayed = cat_with_db();
        entries.iter().for_each(|e| replayed.apply(e).unwrap());
        replayed.shrink_to_fit();
        for cat in [&c, &replayed] {
            let t = cat.db("db").unwrap().table("cpu").unwrap();
            let (host, region) = (t.column("hostname").unwrap().id, t.column("region").unwrap().id);
            let d = t.tag_dict(host).unwrap();
            assert_eq!(d.len(), 300);
            assert_eq!(d.postings(d.id_of("host_17").unwrap()).collect::<Vec<_>>(), [17]);
            let r = t.tag_dict(region).unwrap();
            let want: Vec<SeriesId> = (0..300).filter(|i| i % 9 == 4).collect();
            assert_eq!(r.postings(r.id_of("region_4").unwrap()).collect::<Vec<_>>(), want);
            assert_eq!(t.series_tag_value(123, region), Some("region_6"));
            for i in [0u32, 1, 150, 299] {
                let tags = tsbs_tags(i);
                let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                assert_eq!(found(Resolver::lookup(cat.db("db").unwrap(), "cpu", &tags, &f).unwrap()), Some(i));
            }
            let mut other = tsbs_tags(5);
            other[1].1 = "region_0".into(); // a combination of known values that is no series
            let other: Vec<(&str, &str)> = other.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert!(matches!(Resolver::lookup(cat.db("db").unwrap(), "cpu", &other, &f).unwrap(), Lookup::NewSeries(_)));
        }
    }

    /// `find_series` against a model (every series' tag set in a map), over tag sets drawn from small
    /// alphabets and several column lists, so that values go from one series to many in every order:
    /// each series is found, live and after replay, through a value only it carries or through the
    /// series index, which holds exactly the series that have no such value (each once).
    #[test]
    fn series_are_found_through_a_value_only_they_carry_or_through_the_index() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        let f = [("v", FieldType::Float)];
        let mut model: HashMap<Vec<(String, String)>, SeriesId> = HashMap::default();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (rng >> 33) % n
        };
        let draw = |next: &mut dyn FnMut(u64) -> u64| {
            let mut tags = Vec::new();
            for (k, n) in [("host", 2000), ("region", 4), ("rack", 3)] {
                if next(5) != 0 {
                    tags.push((k.to_string(), format!("{k}{}", next(n))));
                }
            }
            if tags.is_empty() {
                tags.push(("region".to_string(), "region0".to_string()));
            }
            tags
        };
        let lookup = |c: &Catalog, tags: &[(String, String)]| {
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            found(Resolver::lookup(c.db("db").unwrap(), "cpu", &tags, &f).unwrap())
        };
        for _ in 0..3000 {
            let tags = draw(&mut next);
            let probe = draw(&mut next);
            assert_eq!(lookup(&c, &probe), model.get(&probe).copied(), "lookup of {probe:?}");
            let by_name: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let s = Resolver::create(&mut c, 0, "cpu", &by_name, &f, &mut entries).unwrap().series;
            let want = model.len() as SeriesId;
            assert_eq!(s, *model.entry(tags).or_insert(want), "create returns the existing series or the next id");
        }
        let mut replayed = cat_with_db();
        entries.iter().for_each(|e| replayed.apply(e).unwrap());
        for cat in [&c, &replayed] {
            for (tags, s) in &model {
                assert_eq!(lookup(cat, tags), Some(*s), "series {s} {tags:?}");
            }
            let t = cat.db("db").unwrap().table("cpu").unwrap();
            let no_sole: Vec<SeriesId> = (0..t.series_count() as SeriesId)
                .filter(|s| !t.tagset_at(*s).iter().any(|(c, v)| t.tag_dict(c).unwrap().sole_carrier(v).is_some()))
                .collect();
            let mut indexed: Vec<SeriesId> = t.series_index.iter().map(|(s, _)| *s).collect();
            indexed.sort_unstable();
            assert_eq!(indexed, no_sole);
            assert!(no_sole.len() > 100 && no_sole.len() + 100 < model.len(), "both ways exercised: {} of {}", no_sole.len(), model.len());
        }
    }

    fn found(l: Lookup<'_>) -> Option<SeriesId> {
        match l {
            Lookup::Found(r) => Some(r.series),
            _ => None,
        }
    }

    /// The write path's way: `lookup` resolves the names, `create_series` adds the series from what it
    /// found (values known and new), and the entries replay to the same catalog.
    #[test]
    fn series_created_from_a_lookup_match_series_created_by_name() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        let f = [("v", FieldType::Float), ("w", FieldType::Integer)];
        let tags = tsbs_tags(0);
        let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Resolver::create(&mut c, 0, "cpu", &tags, &f, &mut entries).unwrap();
        assert!(matches!(Resolver::lookup(c.db("db").unwrap(), "mem", &tags, &f).unwrap(), Lookup::Missing));
        let x = [("x", FieldType::Float)];
        assert!(matches!(Resolver::lookup(c.db("db").unwrap(), "cpu", &tags, &x).unwrap(), Lookup::Missing));
        assert!(matches!(
            Resolver::lookup(c.db("db").unwrap(), "cpu", &tags, &[("v", FieldType::Integer)]),
            Err(Error::FieldTypeConflict { .. })
        ));
        for i in 1..50u32 {
            let tags = tsbs_tags(i);
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let Lookup::NewSeries(new) = Resolver::lookup(c.db("db").unwrap(), "cpu", &tags, &f).unwrap() else {
                panic!("series {i} should be new")
            };
            // The fields in the row's order; `hostname`'s value (and any value this row brings first) unknown.
            assert_eq!(new.fields.iter().map(|(_, t)| *t).collect::<Vec<_>>(), [FieldType::Float, FieldType::Integer]);
            assert!(new.tags.iter().any(|(_, v, id)| v.starts_with("host_") && matches!(id, ValueLookup::Absent(_))));
            let region = format!("region_{}", i % 9);
            assert_eq!(new.tags.iter().any(|(_, v, id)| *v == region && id.id().is_some()), i >= 9, "series {i}");
            let r = Resolver::create_series(&mut c, 0, new, &mut entries).unwrap();
            assert_eq!(r.series, i);
            assert_eq!(found(Resolver::lookup(c.db("db").unwrap(), "cpu", &tags, &f).unwrap()), Some(i));
        }
        let mut replayed = cat_with_db();
        entries.iter().for_each(|e| replayed.apply(e).unwrap());
        for cat in [&c, &replayed] {
            let t = cat.db("db").unwrap().table("cpu").unwrap();
            assert_eq!(t.series_count(), 50);
            let region = t.column("region").unwrap().id;
            let r = t.tag_dict(region).unwrap();
            let want: Vec<SeriesId> = (0..50).filter(|i| i % 9 == 4).collect();
            assert_eq!(r.postings(r.id_of("region_4").unwrap()).collect::<Vec<_>>(), want);
            assert_eq!(t.series_tag_value(31, t.column("hostname").unwrap().id), Some("host_31"));
        }
        // The per-database limit refuses the series and leaves nothing behind.
        c.set_series_per_database_max(50);
        let tags = tsbs_tags(50);
        let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let Lookup::NewSeries(new) = Resolver::lookup(c.db("db").unwrap(), "cpu", &tags, &f).unwrap() else { panic!() };
        let n = entries.len();
        assert!(matches!(Resolver::create_series(&mut c, 0, new, &mut entries), Err(Error::LimitExceeded { .. })));
        assert_eq!(entries.len(), n);
        assert_eq!(c.db("db").unwrap().table("cpu").unwrap().series_count(), 50);
    }

    /// A row found new under a lock since released, looked up again under the writer's lock: what
    /// another writer added meanwhile is found (its value interned, or the very series made), what it
    /// did not add stays new with the ids known, and a table dropped meanwhile sends the row back to its
    /// names.
    #[test]
    fn a_new_series_looked_up_again_sees_what_was_added_since() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        let f = [("v", FieldType::Float)];
        Resolver::create(&mut c, 0, "cpu", &[("host", "a"), ("region", "eu")], &f, &mut entries).unwrap();
        let lookup = |c: &Catalog, host: &'static str, region: &'static str| {
            let Lookup::NewSeries(new) = Resolver::lookup(c.db("db").unwrap(), "cpu", &[("host", host), ("region", region)], &f).unwrap()
            else {
                panic!("host {host} should be new")
            };
            new
        };
        let (b, c_, d) = (lookup(&c, "b", "us"), lookup(&c, "c", "us"), lookup(&c, "d", "eu"));
        // Another writer makes host b's series (and interns region us), then host e's.
        Resolver::create(&mut c, 0, "cpu", &[("host", "b"), ("region", "us")], &f, &mut entries).unwrap();
        Resolver::create(&mut c, 0, "cpu", &[("host", "e"), ("region", "eu")], &f, &mut entries).unwrap();
        let db = c.db("db").unwrap();
        assert!(matches!(Resolver::lookup_again(db, b), Some(Lookup::Found(r)) if r.series == 1));
        let Some(Lookup::NewSeries(c_)) = Resolver::lookup_again(db, c_) else { panic!("host c is still new") };
        let us = db.table("cpu").unwrap().tag_dict(db.table("cpu").unwrap().column("region").unwrap().id).unwrap().id_of("us");
        assert!(c_.tags.iter().any(|(_, v, id)| *v == "us" && id.id() == us && us.is_some()), "{:?}", c_.tags);
        assert!(c_.tags.iter().any(|(_, v, id)| *v == "c" && matches!(id, ValueLookup::Absent(_))));
        assert_eq!(Resolver::create_series(&mut c, 0, c_, &mut entries).unwrap().series, 3);
        assert_eq!(found(Resolver::lookup(c.db("db").unwrap(), "cpu", &[("host", "c"), ("region", "us")], &f).unwrap()), Some(3));
        // The table dropped (and made again: another id) since the lookup.
        c.apply(&CatalogEntry::DropTable { db: 0, table: 0 }).unwrap();
        Resolver::create(&mut c, 0, "cpu", &[("host", "a"), ("region", "eu")], &f, &mut entries).unwrap();
        assert!(Resolver::lookup_again(c.db("db").unwrap(), d).is_none());
    }

    /// Issue 5's budget is 300 resident bytes per series at 10 M series, the whole process included; the
    /// catalog's share at TSBS's ten tags must stay a fraction of it.
    #[test]
    fn a_series_costs_the_catalog_under_150_bytes() {
        let n = 200_000u32;
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        for i in 0..n {
            let tags = tsbs_tags(i);
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Resolver::create(&mut c, 0, "cpu", &tags, &[("v", FieldType::Float)], &mut entries).unwrap();
            entries.clear();
        }
        c.shrink_to_fit();
        let per_series = c.series_heap_bytes() as f64 / f64::from(n);
        eprintln!("catalog: {per_series:.1} heap bytes per series at {n} series");
        assert!(per_series < 150.0, "{per_series:.1} bytes per series");
        assert!(per_series > 50.0, "{per_series:.1} bytes per series: the measure misses the tag sets (4 bytes a tag)");
    }

    #[test]
    fn series_beyond_the_database_limit_are_refused_and_existing_ones_still_resolve() {
        let mut c = cat_with_db();
        c.set_series_per_database_max(3);
        let mut entries = Vec::new();
        let f = [("v", FieldType::Float)];
        for (table, host) in [("cpu", "a"), ("cpu", "b"), ("mem", "a")] {
            Resolver::create(&mut c, 0, table, &[("host", host)], &f, &mut entries).unwrap();
        }
        let n = entries.len();
        let err = Resolver::create(&mut c, 0, "disk", &[("dev", "sda")], &f, &mut entries).unwrap_err();
        assert!(c.db("db").unwrap().table("disk").is_none(), "a refused row creates no table");
        let err2 = Resolver::create(&mut c, 0, "cpu", &[("host", "c")], &f, &mut entries).unwrap_err();
        assert_eq!(err.to_string(), err2.to_string());
        assert!(
            matches!(err, Error::LimitExceeded { what: "series per database", actual: 4, limit: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("--max-series-per-database"), "{err}");
        assert_eq!(entries.len(), n, "a refused series leaves no catalog entry");
        assert_eq!(Resolver::create(&mut c, 0, "cpu", &[("host", "b")], &f, &mut entries).unwrap().series, 1);
        c.set_series_per_database_max(0);
        assert_eq!(Resolver::create(&mut c, 0, "cpu", &[("host", "c")], &f, &mut entries).unwrap().series, 2);
    }

    #[test]
    fn type_conflict_is_reported_and_changes_nothing() {
        let mut c = cat_with_db();
        let mut entries = Vec::new();
        Resolver::create(&mut c, 0, "m", &[], &[("v", FieldType::Integer)], &mut entries).unwrap();
        let n = entries.len();
        let err = Resolver::lookup(c.db("db").unwrap(), "m", &[], &[("v", FieldType::Float)]).unwrap_err();
        assert!(err.to_string().contains("field type conflict"), "{err}");
        let err = Resolver::create(&mut c, 0, "m", &[("t", "x")], &[("w", FieldType::Float), ("v", FieldType::Float)], &mut entries)
            .unwrap_err();
        assert!(matches!(err, Error::FieldTypeConflict { .. }));
        assert_eq!(entries.len(), n, "a rejected row must not add columns");
        assert!(c.db("db").unwrap().table("m").unwrap().column("w").is_none());
    }

    #[test]
    fn tag_and_field_with_the_same_name_conflict() {
        let mut c = cat_with_db();
        let mut e = Vec::new();
        Resolver::create(&mut c, 0, "m", &[("x", "1")], &[("v", FieldType::Float)], &mut e).unwrap();
        let err = Resolver::create(&mut c, 0, "m", &[], &[("x", FieldType::Float)], &mut e).unwrap_err();
        assert!(matches!(err, Error::ColumnKindConflict { .. }));
    }

    #[test]
    fn dropped_database_ignores_late_entries_and_ids_are_not_reused() {
        let mut c = cat_with_db();
        c.apply(&CatalogEntry::CreateTable { db: 0, table: 0, name: "t".into() }).unwrap();
        c.apply(&CatalogEntry::DropDb { db: 0 }).unwrap();
        c.apply(&CatalogEntry::CreateTable { db: 0, table: 1, name: "u".into() }).unwrap();
        assert!(c.db("db").is_none());
        assert_eq!(c.next_db_id(), 1);
        assert_eq!(c.next_table_id(), 2);
    }
}
