//! zarrs over a `.ra` read in place: [`RaStorage`], a read-only zarrs storage that
//! serves one file (or object) as a Zarr v3 array at the root, `zarr.json` generated
//! from its header and trailer ([`InPlace`]) and each chunk read from the file's bytes.
//! So zarrs users, and tools built on zarrs, open a `.ra` as `Array::open(storage,
//! "/")`. Nothing is written, and a short last chunk is padded in memory.

use std::ops::Range;

use zarrs::storage::byte_range::{ByteRangeIterator, InvalidByteRangeError};
use zarrs::storage::{
    Bytes, MaybeBytes, MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey,
};

use super::InPlace;
use crate::error::Result;

/// Reads a byte range of the file or object, from any thread.
pub type ReadRange = Box<dyn Fn(Range<u64>) -> Result<Vec<u8>> + Send + Sync>;

/// A `.ra` file or object as a zarrs storage holding one Zarr v3 array at its root.
pub struct RaStorage {
    view: InPlace,
    meta: Bytes,
    read: ReadRange,
}

impl RaStorage {
    /// The storage of `view`, its chunks read through `read`.
    pub fn new(view: InPlace, read: ReadRange) -> RaStorage {
        let meta = Bytes::from(view.zarr_json.to_string().into_bytes());
        RaStorage { view, meta, read }
    }

    /// The array's layout.
    pub fn view(&self) -> &InPlace {
        &self.view
    }

    /// The bytes at `key`: `zarr.json`, or a chunk (`c/0/…/i`), or `None`.
    fn value(&self, key: &StoreKey) -> std::result::Result<Option<Bytes>, StorageError> {
        if key.as_str() == "zarr.json" {
            return Ok(Some(self.meta.clone()));
        }
        let Some(i) = self.view.chunk_of_key_v3(key.as_str()) else {
            return Ok(None);
        };
        let mut bytes =
            (self.read)(self.view.range(i)).map_err(|e| StorageError::Other(e.to_string()))?;
        bytes.resize(self.view.chunk_bytes as usize, 0);
        Ok(Some(Bytes::from(bytes)))
    }
}

/// `byte_ranges` of `value`, a whole value a storage holds: each a slice of it, or an
/// error for a range past its end.
pub(super) fn ranges_of<'a>(
    value: Bytes,
    byte_ranges: ByteRangeIterator<'a>,
) -> MaybeBytesIterator<'a> {
    let size = value.len() as u64;
    let parts: Vec<_> = byte_ranges
        .map(|r| {
            if r.end(size) > size || r.start(size) > r.end(size) {
                Err(InvalidByteRangeError::new(r, size).into())
            } else {
                Ok(value.slice(r.to_range_usize(size)))
            }
        })
        .collect();
    Some(Box::new(parts.into_iter()))
}

impl ReadableStorageTraits for RaStorage {
    fn get(&self, key: &StoreKey) -> std::result::Result<MaybeBytes, StorageError> {
        self.value(key)
    }

    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> std::result::Result<MaybeBytesIterator<'a>, StorageError> {
        Ok(self
            .value(key)?
            .and_then(|value| ranges_of(value, byte_ranges)))
    }

    fn size_key(&self, key: &StoreKey) -> std::result::Result<Option<u64>, StorageError> {
        if key.as_str() == "zarr.json" {
            return Ok(Some(self.meta.len() as u64));
        }
        Ok(self
            .view
            .chunk_of_key_v3(key.as_str())
            .map(|_| self.view.chunk_bytes))
    }

    fn supports_get_partial(&self) -> bool {
        false
    }
}
