//! The bytes hdf5-reader parses, read by rastore: positioned reads of the file through
//! the platform layer (`crate::sys`), each range checked against the file's length
//! before anything is allocated for it, behind a small block cache (object headers,
//! heaps and B-tree nodes are many small reads close together).

use std::fs::File;
use std::sync::Arc;

use hdf5_reader::error::{Error as H5Error, Result as H5Result};
use hdf5_reader::{BlockCacheStorage, Storage, StorageBuffer};

/// Bytes of one cached block, and how many blocks are kept: 4 MiB at most.
const BLOCK: usize = 64 << 10;
const BLOCKS: usize = 64;

/// A file read by positioned reads, `len` bytes long when opened.
struct FileBytes {
    file: Arc<File>,
    len: u64,
}

impl Storage for FileBytes {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_range(&self, offset: u64, len: usize) -> H5Result<StorageBuffer> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(H5Error::UnexpectedEof {
                offset,
                needed: len as u64,
                available: self.len.saturating_sub(offset),
            });
        }
        let mut buf = vec![0u8; len];
        crate::sys::read_exact_at(&self.file, &mut buf, offset)?;
        Ok(StorageBuffer::from_vec(buf))
    }
}

/// The storage hdf5-reader parses `file` (`len` bytes) from.
pub(super) fn storage(file: Arc<File>, len: u64) -> hdf5_reader::storage::DynStorage {
    let inner: hdf5_reader::storage::DynStorage = Arc::new(FileBytes { file, len });
    Arc::new(BlockCacheStorage::new(inner, BLOCK, BLOCKS))
}
