//! `catalog.log`: the durable record of catalog entries, append-only.
//!
//! Framed with [`crate::frame`] (magic `SDCATLOG`, version 1). Each record's payload is one encoded
//! [`CatalogEntry`]:
//! ```text
//! kind:u8 then, by kind (ids are u32 LE unless noted; strings are uvarint length + UTF-8):
//! 1 CreateDb     db name retention_ns:i64
//! 2 DropDb       db
//! 3 CreateTable  db table name
//! 4 DropTable    db table
//! 5 AddColumn    db table col:u16 kind:u8 (0 = tag, else FieldType) name
//! 6 AddSeries    db table series n:uvarint (col:u16 value)*n
//! 7 SetRetention db retention_ns:i64
//! 8 Tombstone    id:u64 db table all:u8 [all = 0: n:uvarint series:uvarint*n (ascending)]
//!                ts_min:i64 ts_max:i64 gen:u64 wal_seq:u64
//! 9 Counters     next_db next_table next_tombstone_id:u64 next_generation:u64 next_wal_seq:u64
//! ```
//! Kind 8 was added with segment format 2 (storage v2), kind 9 with the log rewrite; the log's own
//! version stays 1 because each change only adds a kind: an older build meets it as "a checksummed
//! catalog record does not decode".
//!
//! # Rewrite
//! The log only grows: drops, superseded retentions, tombstones that compaction has applied and the
//! entries each restart appends again from the WAL all stay. [`CatalogLog::rewrite`] replaces it with a
//! snapshot (the engine decides what is live, see `engine/catalog_rewrite.rs`):
//! 1. write the snapshot to `catalog.log.tmp` (created fresh) and fsync it;
//! 2. rename it over `catalog.log` (atomic), and append from then on through the new file;
//! 3. fsync the directory.
//!
//! A crash before 2 leaves the old log whole, and [`CatalogLog::open`] deletes the leftover `.tmp`; a
//! crash after 2 leaves one of the two logs, which describe the same catalog. An error in 1 or 2 changes
//! nothing; an error in 3 leaves unknown which log a power loss would keep, while later appends go to
//! the new one: the engine stops accepting changes ([`RewriteError::AfterRename`]).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::catalog::{CatalogEntry, ColumnKind, Counters};
use crate::tombstone::Tombstone;
use crate::encoding::{Reader, put_i64, put_str, put_u8, put_u16, put_u32, put_u64, put_uvarint};
use crate::error::{Error, Result};
use crate::frame;
use crate::limits::{CATALOG_RECORD_BYTES_MAX, COLUMNS_PER_TABLE_MAX, NAME_BYTES_MAX, TOMBSTONE_SERIES_MAX};
use crate::types::FieldType;

pub const MAGIC: &[u8; 8] = b"SDCATLOG";
pub const VERSION: u32 = 1;

pub fn encode_entry(out: &mut Vec<u8>, e: &CatalogEntry) {
    match e {
        CatalogEntry::CreateDb { db, name, retention_ns } => {
            put_u8(out, 1);
            put_u32(out, *db);
            put_str(out, name);
            put_i64(out, *retention_ns);
        }
        CatalogEntry::DropDb { db } => {
            put_u8(out, 2);
            put_u32(out, *db);
        }
        CatalogEntry::CreateTable { db, table, name } => {
            put_u8(out, 3);
            put_u32(out, *db);
            put_u32(out, *table);
            put_str(out, name);
        }
        CatalogEntry::DropTable { db, table } => {
            put_u8(out, 4);
            put_u32(out, *db);
            put_u32(out, *table);
        }
        CatalogEntry::AddColumn { db, table, col, name, kind } => {
            put_u8(out, 5);
            put_u32(out, *db);
            put_u32(out, *table);
            put_u16(out, *col);
            put_u8(out, match kind {
                ColumnKind::Tag => 0,
                ColumnKind::Field(t) => *t as u8,
            });
            put_str(out, name);
        }
        CatalogEntry::AddSeries { db, table, series, tags } => {
            put_u8(out, 6);
            put_u32(out, *db);
            put_u32(out, *table);
            put_u32(out, *series);
            put_uvarint(out, tags.len() as u64);
            for (c, v) in tags {
                put_u16(out, *c);
                put_str(out, v);
            }
        }
        CatalogEntry::SetRetention { db, retention_ns } => {
            put_u8(out, 7);
            put_u32(out, *db);
            put_i64(out, *retention_ns);
        }
        CatalogEntry::Tombstone(t) => {
            put_u8(out, 8);
            put_u64(out, t.id);
            put_u32(out, t.db);
            put_u32(out, t.table);
            match &t.series {
                None => put_u8(out, 1),
                Some(s) => {
                    put_u8(out, 0);
                    put_uvarint(out, s.len() as u64);
                    for id in s {
                        put_uvarint(out, u64::from(*id));
                    }
                }
            }
            put_i64(out, t.ts_min);
            put_i64(out, t.ts_max);
            put_u64(out, t.generation);
            put_u64(out, t.wal_seq);
        }
        CatalogEntry::Counters(c) => {
            put_u8(out, 9);
            put_u32(out, c.next_db);
            put_u32(out, c.next_table);
            put_u64(out, c.next_tombstone_id);
            put_u64(out, c.next_generation);
            put_u64(out, c.next_wal_seq);
        }
    }
}

/// Decodes one entry; `None` if the bytes are not a valid entry.
pub fn decode_entry(r: &mut Reader<'_>) -> Option<CatalogEntry> {
    let name = |r: &mut Reader<'_>| r.str(NAME_BYTES_MAX).map(str::to_string);
    Some(match r.u8()? {
        1 => CatalogEntry::CreateDb { db: r.u32()?, name: name(r)?, retention_ns: r.i64()? },
        2 => CatalogEntry::DropDb { db: r.u32()? },
        3 => CatalogEntry::CreateTable { db: r.u32()?, table: r.u32()?, name: name(r)? },
        4 => CatalogEntry::DropTable { db: r.u32()?, table: r.u32()? },
        5 => {
            let (db, table, col) = (r.u32()?, r.u32()?, r.u16()?);
            let kind = match r.u8()? {
                0 => ColumnKind::Tag,
                t => ColumnKind::Field(FieldType::from_u8(t)?),
            };
            CatalogEntry::AddColumn { db, table, col, kind, name: name(r)? }
        }
        6 => {
            let (db, table, series) = (r.u32()?, r.u32()?, r.u32()?);
            let n = r.len(COLUMNS_PER_TABLE_MAX)?;
            let mut tags = Vec::with_capacity(n);
            for _ in 0..n {
                tags.push((r.u16()?, name(r)?));
            }
            CatalogEntry::AddSeries { db, table, series, tags }
        }
        7 => CatalogEntry::SetRetention { db: r.u32()?, retention_ns: r.i64()? },
        8 => {
            let (id, db, table) = (r.u64()?, r.u32()?, r.u32()?);
            let series = match r.u8()? {
                1 => None,
                0 => {
                    let n = r.len(TOMBSTONE_SERIES_MAX.min(r.remaining()))?;
                    let ids = (0..n).map(|_| u32::try_from(r.uvarint()?).ok()).collect::<Option<Vec<_>>>()?;
                    if !ids.windows(2).all(|w| w[0] < w[1]) {
                        return None;
                    }
                    Some(ids)
                }
                _ => return None,
            };
            let (ts_min, ts_max, generation, wal_seq) = (r.i64()?, r.i64()?, r.u64()?, r.u64()?);
            CatalogEntry::Tombstone(Tombstone { id, db, table, series, ts_min, ts_max, generation, wal_seq })
        }
        9 => CatalogEntry::Counters(Counters {
            next_db: r.u32()?,
            next_table: r.u32()?,
            next_tombstone_id: r.u64()?,
            next_generation: r.u64()?,
            next_wal_seq: r.u64()?,
        }),
        _ => return None,
    })
}

/// The open catalog log, positioned at its end.
pub struct CatalogLog {
    path: PathBuf,
    file: File,
    /// Records in the file (the measure of its dead weight, against what a snapshot would write).
    records: u64,
    /// Bytes of the file.
    bytes: u64,
}

/// Why [`CatalogLog::rewrite`] failed, and so whether the log is still the old one.
#[derive(Debug)]
pub enum RewriteError {
    /// Nothing changed: the old log is in place and still appended to.
    Before(Error),
    /// The new log is in place and appended to, but the directory fsync failed: a power loss may bring
    /// back the old one without the later appends. The caller must stop accepting changes.
    AfterRename(Error),
}

/// The temporary file of a rewrite: `catalog.log.tmp` next to `catalog.log`.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// The bytes of a whole log holding `entries`: header, then one record each.
pub fn encode_log(entries: &[CatalogEntry]) -> Result<Vec<u8>> {
    let mut buf = frame::header(MAGIC, VERSION).to_vec();
    let mut payload = Vec::new();
    for e in entries {
        payload.clear();
        encode_entry(&mut payload, e);
        check_record_len(&payload)?;
        frame::put_record(&mut buf, &payload);
    }
    Ok(buf)
}

fn check_record_len(payload: &[u8]) -> Result<()> {
    if payload.len() > CATALOG_RECORD_BYTES_MAX {
        return Err(Error::LimitExceeded {
            what: "catalog record bytes",
            actual: payload.len() as u64,
            limit: CATALOG_RECORD_BYTES_MAX as u64,
            fix: "use fewer tags per series or shorter tag values",
        });
    }
    Ok(())
}

impl CatalogLog {
    /// Opens (creating if absent) the log and returns every valid entry in it. A torn tail is truncated
    /// with a warning.
    ///
    /// A `catalog.log.tmp` left by a rewrite that a crash cut short is deleted: until its rename, the
    /// old log is the valid one.
    pub fn open(path: &Path) -> Result<(CatalogLog, Vec<CatalogEntry>)> {
        let mut entries = Vec::new();
        let log = Self::open_with(path, |e| {
            entries.push(e);
            Ok(())
        })?;
        Ok((log, entries))
    }

    /// [`CatalogLog::open`] handing each entry to `on_entry` in order instead of collecting them: at
    /// millions of series the entries, each with its own strings, would take several times the memory of
    /// the catalog they build.
    pub fn open_with(path: &Path, mut on_entry: impl FnMut(CatalogEntry) -> Result<()>) -> Result<CatalogLog> {
        let io = |e| Error::io(path, e);
        let tmp = tmp_path(path);
        match std::fs::remove_file(&tmp) {
            Ok(()) => tracing::warn!(path = %tmp.display(), "removed the temporary file of a catalog log rewrite cut short by a crash"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&tmp, e)),
        }
        let mut file = OpenOptions::new().read(true).append(true).create(true).open(path).map_err(io)?;
        let bytes = std::fs::read(path).map_err(io)?;
        let fresh = frame::header(MAGIC, VERSION);
        if bytes.len() < frame::HEADER_BYTES && fresh.starts_with(&bytes) {
            // Empty, or a header cut short by a crash while the file was created: it holds no entry.
            if !bytes.is_empty() {
                tracing::warn!(path = %path.display(), bytes = bytes.len(), "rewriting a catalog log whose header was torn");
                file.set_len(0).map_err(io)?;
            }
            file.write_all(&fresh).map_err(io)?;
            file.sync_all().map_err(io)?;
            return Ok(CatalogLog { path: path.to_path_buf(), file, records: 0, bytes: frame::HEADER_BYTES as u64 });
        }
        match frame::check_header(&bytes, MAGIC) {
            Some(VERSION) => {}
            Some(v) => {
                return Err(Error::UnsupportedVersion {
                    path: path.to_path_buf(),
                    version: v,
                    supported: VERSION.to_string(),
                    fix: "run the Sundial version that wrote this data directory",
                });
            }
            None => {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    offset: 0,
                    what: "not a Sundial catalog log (bad magic)".into(),
                });
            }
        }
        let body = &bytes[frame::HEADER_BYTES..];
        let mut frames = frame::Frames::new(body, CATALOG_RECORD_BYTES_MAX);
        let mut records = 0u64;
        for payload in frames.by_ref() {
            let mut r = Reader::new(payload);
            match decode_entry(&mut r) {
                Some(e) if r.is_empty() => {
                    records += 1;
                    on_entry(e)?;
                }
                _ => {
                    return Err(Error::Corrupt {
                        path: path.to_path_buf(),
                        offset: (frame::HEADER_BYTES + frames.valid_len()) as u64,
                        what: "a checksummed catalog record does not decode (written by a newer version?)".into(),
                    });
                }
            }
        }
        let keep = (frame::HEADER_BYTES + frames.valid_len()) as u64;
        if let Some(why) = frames.torn() {
            tracing::warn!(path = %path.display(), offset = keep, why, "truncating torn tail of the catalog log");
            file.set_len(keep).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        Ok(CatalogLog { path: path.to_path_buf(), file, records, bytes: keep })
    }

    /// Records and bytes in the file.
    pub fn size(&self) -> (u64, u64) {
        (self.records, self.bytes)
    }

    /// Replaces the log by one holding exactly `entries` (see the module doc for the protocol and its
    /// crash cases). Later appends go to the new file.
    pub fn rewrite(&mut self, entries: &[CatalogEntry]) -> std::result::Result<(), RewriteError> {
        self.rewrite_with(&mut |put| entries.iter().try_for_each(|e| put(e)))
    }

    /// [`CatalogLog::rewrite`] with the entries handed over one at a time by `fill`, which calls `put`
    /// for each: the new log is streamed to its temporary file, never held whole in memory.
    pub fn rewrite_with(&mut self, fill: &mut EntrySource<'_>) -> std::result::Result<(), RewriteError> {
        let tmp = tmp_path(&self.path);
        let (file, records) = write_tmp_with(&tmp, fill).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RewriteError::Before(e)
        })?;
        let bytes = file.metadata().map_err(|e| RewriteError::Before(Error::io(&tmp, e)))?.len();
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RewriteError::Before(Error::io(&self.path, e))
        })?;
        // The open descriptor follows the inode: it is now `catalog.log`.
        self.file = file;
        self.records = records;
        self.bytes = bytes;
        let dir = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| RewriteError::AfterRename(Error::io(dir, e)))
    }

    /// Appends entries and makes them durable before returning.
    pub fn append(&mut self, entries: &[CatalogEntry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::new();
        let mut payload = Vec::new();
        for e in entries {
            payload.clear();
            encode_entry(&mut payload, e);
            frame::put_record(&mut buf, &payload);
        }
        let io = |e| Error::io(&self.path, e);
        self.file.write_all(&buf).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.records += entries.len() as u64;
        self.bytes += buf.len() as u64;
        Ok(())
    }
}

/// Step 1 of a rewrite: `tmp` holds the whole new log, fsynced. Returns the file, open for appending.
/// (Also what a test writes to simulate a crash before the rename.)
pub fn write_tmp(tmp: &Path, entries: &[CatalogEntry]) -> Result<File> {
    Ok(write_tmp_with(tmp, &mut |put| entries.iter().try_for_each(|e| put(e)))?.0)
}

/// Hands each entry of a new log to the `put` it is given, in order (see [`CatalogLog::rewrite_with`]).
pub type EntrySource<'a> = dyn FnMut(&mut dyn FnMut(&CatalogEntry) -> Result<()>) -> Result<()> + 'a;

/// [`write_tmp`] streaming the entries from `fill`; returns the file and how many records it holds.
fn write_tmp_with(tmp: &Path, fill: &mut EntrySource<'_>) -> Result<(File, u64)> {
    let io = |e| Error::io(tmp, e);
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let file = OpenOptions::new().read(true).append(true).create_new(true).open(tmp).map_err(io)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    out.write_all(&frame::header(MAGIC, VERSION)).map_err(io)?;
    let (mut payload, mut record, mut records) = (Vec::new(), Vec::new(), 0u64);
    fill(&mut |e| {
        payload.clear();
        record.clear();
        encode_entry(&mut payload, e);
        check_record_len(&payload)?;
        frame::put_record(&mut record, &payload);
        records += 1;
        out.write_all(&record).map_err(io)
    })?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok((file, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<CatalogEntry> {
        vec![
            CatalogEntry::CreateDb { db: 3, name: "db".into(), retention_ns: 7 },
            CatalogEntry::CreateTable { db: 3, table: 9, name: "cpu".into() },
            CatalogEntry::AddColumn { db: 3, table: 9, col: 0, name: "host".into(), kind: ColumnKind::Tag },
            CatalogEntry::AddColumn {
                db: 3,
                table: 9,
                col: 1,
                name: "v".into(),
                kind: ColumnKind::Field(FieldType::UInteger),
            },
            CatalogEntry::AddSeries { db: 3, table: 9, series: 0, tags: vec![(0, "h é".into())] },
            CatalogEntry::SetRetention { db: 3, retention_ns: 99 },
            CatalogEntry::Tombstone(Tombstone { id: 1, db: 3, table: 9, series: None, ts_min: -5, ts_max: 5, generation: 2, wal_seq: 7 }),
            CatalogEntry::Tombstone(Tombstone { id: 2, db: 3, table: 9, series: Some(vec![0, 300]), ts_min: i64::MIN, ts_max: i64::MAX, generation: 0, wal_seq: 1 }),
            CatalogEntry::DropTable { db: 3, table: 9 },
            CatalogEntry::DropDb { db: 3 },
            CatalogEntry::Counters(Counters { next_db: 4, next_table: 10, next_tombstone_id: 3, next_generation: 8, next_wal_seq: 1 << 40 }),
        ]
    }

    #[test]
    fn a_rewrite_replaces_the_log_and_later_appends_land_in_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, _) = CatalogLog::open(&path).unwrap();
        log.append(&sample()).unwrap();
        let (records, bytes) = log.size();
        assert_eq!(records, sample().len() as u64);
        assert_eq!(bytes, std::fs::metadata(&path).unwrap().len());
        let snapshot = sample()[..2].to_vec();
        log.rewrite(&snapshot).unwrap();
        assert!(!tmp_path(&path).exists());
        log.append(&[CatalogEntry::DropDb { db: 4 }]).unwrap();
        assert_eq!(log.size(), (3, std::fs::metadata(&path).unwrap().len()));
        assert!(log.size().1 < bytes, "the log shrank");
        drop(log);
        let (_, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, [snapshot, vec![CatalogEntry::DropDb { db: 4 }]].concat());
    }

    /// A crash during a rewrite leaves `catalog.log.tmp` (whole or cut short) next to the old log, which
    /// is still the valid one: open must ignore and delete the temporary file.
    #[test]
    fn a_rewrite_cut_short_before_its_rename_leaves_the_old_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, _) = CatalogLog::open(&path).unwrap();
        log.append(&sample()).unwrap();
        drop(log);
        let whole = encode_log(&sample()[..1]).unwrap();
        for tmp_bytes in [whole.clone(), whole[..whole.len() - 5].to_vec(), Vec::new()] {
            std::fs::write(tmp_path(&path), &tmp_bytes).unwrap();
            let (_, got) = CatalogLog::open(&path).unwrap();
            assert_eq!(got, sample());
            assert!(!tmp_path(&path).exists(), "the leftover temporary file is deleted");
        }
    }

    #[test]
    fn entries_survive_reopen_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, got) = CatalogLog::open(&path).unwrap();
        assert!(got.is_empty());
        log.append(&sample()).unwrap();
        drop(log);
        let (_, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, sample());

        let full = std::fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 3).unwrap();
        let (mut log, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, sample()[..sample().len() - 1]);
        log.append(&[CatalogEntry::DropDb { db: 4 }]).unwrap();
        let (_, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got.last(), Some(&CatalogEntry::DropDb { db: 4 }));
    }
}
