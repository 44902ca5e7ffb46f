//! `catalog.log` record payloads under hostile input (`catalog_log::decode_record`): entries of kinds
//! 1–9 and series batches (kind 10, whose tag columns go through the String column codec).
//!
//! Input: the payload itself (a first byte of 10 reaches the batch decoder). No panic and no huge
//! allocation; whatever decodes must encode again and decode to the same record (a batch through
//! `SeriesBatch::encode`, an entry through `encode_entry`), and a batch must expand to exactly its
//! series count of `AddSeries` with consecutive ids.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sundial_storage::catalog::CatalogEntry;
use sundial_storage::catalog_log::{Record, decode_record, encode_entry};

fuzz_target!(|data: &[u8]| {
    let Ok(record) = decode_record(data) else { return };
    let mut again = Vec::new();
    match &record {
        Record::Entry(e) => encode_entry(&mut again, e),
        Record::Series(b) => {
            b.encode(&mut again);
            let n = b.len();
            let ids: Vec<u32> = b
                .clone()
                .into_entries()
                .map(|e| match e {
                    CatalogEntry::AddSeries { series, .. } => series,
                    other => panic!("a batch expanded to {other:?}"),
                })
                .collect();
            assert_eq!(ids.len(), n);
            assert!(ids.iter().zip(b.first..).all(|(a, b)| *a == b));
        }
    }
    assert_eq!(decode_record(&again).as_ref(), Ok(&record), "re-encoded record decodes differently");
});
