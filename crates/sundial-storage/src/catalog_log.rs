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
//! ```
//! Kind 8 was added with segment format 2 (storage v2); the log's own version stays 1 because the
//! change only adds a kind: an older build meets it as "a checksummed catalog record does not decode".

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::catalog::{CatalogEntry, ColumnKind};
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
        _ => return None,
    })
}

/// The open catalog log, positioned at its end.
pub struct CatalogLog {
    path: PathBuf,
    file: File,
}

impl CatalogLog {
    /// Opens (creating if absent) the log and returns every valid entry in it. A torn tail is truncated
    /// with a warning.
    pub fn open(path: &Path) -> Result<(CatalogLog, Vec<CatalogEntry>)> {
        let io = |e| Error::io(path, e);
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
            return Ok((CatalogLog { path: path.to_path_buf(), file }, Vec::new()));
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
        let mut entries = Vec::new();
        for payload in frames.by_ref() {
            let mut r = Reader::new(payload);
            match decode_entry(&mut r) {
                Some(e) if r.is_empty() => entries.push(e),
                _ => {
                    return Err(Error::Corrupt {
                        path: path.to_path_buf(),
                        offset: (frame::HEADER_BYTES + frames.valid_len()) as u64,
                        what: "a checksummed catalog record does not decode (written by a newer version?)".into(),
                    });
                }
            }
        }
        if let Some(why) = frames.torn() {
            let keep = (frame::HEADER_BYTES + frames.valid_len()) as u64;
            tracing::warn!(path = %path.display(), offset = keep, why, "truncating torn tail of the catalog log");
            file.set_len(keep).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        Ok((CatalogLog { path: path.to_path_buf(), file }, entries))
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
        self.file.sync_data().map_err(io)
    }
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
        ]
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
