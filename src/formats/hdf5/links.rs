//! A group's links, listed by rastore from the group's own object header, without
//! opening the objects they lead to: so that one object that cannot be read (a virtual
//! dataset, a corrupt header) is refused by its name and does not hide its siblings.
//! The three ways HDF5 stores a group's links: a symbol table (a v1 B-tree of symbol
//! nodes, names in a local heap), link messages in the header (compact), and dense
//! storage (a fractal heap of link messages indexed by a v2 B-tree).

use hdf5_reader::btree_v1;
use hdf5_reader::btree_v2::{self, BTreeV2Header, BTreeV2Record};
use hdf5_reader::error::{Error as H5Error, Result as H5Result};
use hdf5_reader::fractal_heap::{FractalHeap, FractalHeapDirectBlockCache};
use hdf5_reader::io::Cursor;
use hdf5_reader::local_heap::LocalHeap;
use hdf5_reader::messages::link::{self, LinkTarget};
use hdf5_reader::messages::HdfMessage;
use hdf5_reader::object_header::ObjectHeader;
use hdf5_reader::symbol_table::SymbolTableNode;
use hdf5_reader::Storage;

/// Most links one group may have: a larger count is refused as malformed.
const MAX_LINKS: usize = 1 << 20;

/// Adds `link` to `out`, refusing a group of more than [`MAX_LINKS`].
fn push(out: &mut Vec<Link>, link: Link) -> H5Result<()> {
    if out.len() >= MAX_LINKS {
        return Err(H5Error::InvalidData(format!(
            "a group of more than {MAX_LINKS} links"
        )));
    }
    out.push(link);
    Ok(())
}

/// A link of a group: its name and where it leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The link's name in its group.
    pub name: String,
    /// Where it leads.
    pub target: LinkTarget,
}

/// Sizes of the file's addresses and lengths, from its superblock.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub offset: u8,
    pub length: u8,
}

/// The links of the group whose object header is `header`, sorted by name (as `h5ls`
/// lists them); none if it is no group.
pub fn links(storage: &dyn Storage, header: &ObjectHeader, sizes: Sizes) -> H5Result<Vec<Link>> {
    let mut out = Vec::new();
    for m in &header.messages {
        match m {
            HdfMessage::SymbolTable(st) => {
                symbol_table(storage, st.btree_address, st.heap_address, sizes, &mut out)?
            }
            HdfMessage::Link(l) => push(
                &mut out,
                Link {
                    name: l.name.clone(),
                    target: l.target.clone(),
                },
            )?,
            HdfMessage::LinkInfo(li)
                if !Cursor::is_undefined_offset(li.fractal_heap_address, sizes.offset) =>
            {
                dense(
                    storage,
                    li.fractal_heap_address,
                    li.btree_name_index_address,
                    sizes,
                    &mut out,
                )?
            }
            _ => {}
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    Ok(out)
}

/// The links of a group stored as a symbol table (superblocks 0 and 1).
fn symbol_table(
    storage: &dyn Storage,
    btree: u64,
    heap: u64,
    sizes: Sizes,
    out: &mut Vec<Link>,
) -> H5Result<()> {
    let heap = LocalHeap::parse_at_storage(storage, heap, sizes.offset, sizes.length)?;
    let segment_len = usize::try_from(heap.data_segment_size)
        .map_err(|_| H5Error::InvalidData("local heap larger than memory".into()))?;
    // Read only once a name is needed (the storage checks it lies in the file).
    let mut names: Option<hdf5_reader::StorageBuffer> = None;
    let leaves = btree_v1::collect_btree_v1_leaves_storage(
        storage,
        btree,
        sizes.offset,
        sizes.length,
        None,
        &[],
        None,
    )?;
    let entry = 2 * usize::from(sizes.offset) + 4 + 4 + 16;
    for (_, node) in leaves {
        let prefix = storage.read_range(node, 8)?;
        let count = usize::from(u16::from_le_bytes([prefix[6], prefix[7]]));
        let bytes = storage.read_range(node, 8 + count * entry)?;
        let snod = SymbolTableNode::parse(&mut Cursor::new(&bytes), sizes.offset, sizes.length)?;
        for e in &snod.entries {
            if names.is_none() {
                names = Some(storage.read_range(heap.data_segment_address, segment_len)?);
            }
            let segment = names.as_deref().unwrap_or_default();
            let name = heap_string(segment, e.link_name_offset)?;
            let target = if e.cache_type == 2 {
                // A soft link: the scratch pad holds its value's offset in the heap.
                let at =
                    u32::from_le_bytes([e.scratch[0], e.scratch[1], e.scratch[2], e.scratch[3]]);
                LinkTarget::Soft {
                    path: heap_string(segment, u64::from(at))?,
                }
            } else {
                LinkTarget::Hard {
                    address: e.object_header_address,
                }
            };
            push(out, Link { name, target })?;
        }
    }
    Ok(())
}

/// The NUL-terminated string at `offset` of a local heap's data `segment`.
fn heap_string(segment: &[u8], offset: u64) -> H5Result<String> {
    let rest = usize::try_from(offset)
        .ok()
        .and_then(|o| segment.get(o..))
        .ok_or(H5Error::OffsetOutOfBounds(offset))?;
    let end = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| H5Error::InvalidData("a local heap name with no terminating NUL".into()))?;
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The links of a group in dense storage (many links, or creation order tracked).
fn dense(
    storage: &dyn Storage,
    heap: u64,
    index: u64,
    sizes: Sizes,
    out: &mut Vec<Link>,
) -> H5Result<()> {
    let heap = FractalHeap::parse_at_storage(storage, heap, sizes.offset, sizes.length)?;
    let header = BTreeV2Header::parse_at_storage(storage, index, sizes.offset, sizes.length)?;
    let records = btree_v2::collect_btree_v2_records_storage(
        storage,
        &header,
        sizes.offset,
        sizes.length,
        None,
        &[],
        None,
    )?;
    let mut cache = FractalHeapDirectBlockCache::default();
    for record in &records {
        let id = match record {
            BTreeV2Record::LinkNameHash { heap_id, .. }
            | BTreeV2Record::CreationOrder { heap_id, .. } => heap_id,
            _ => continue,
        };
        let bytes = heap.get_object_storage_cached_with_registry(
            id,
            storage,
            sizes.offset,
            sizes.length,
            &mut cache,
            None,
        )?;
        let m = link::parse(
            &mut Cursor::new(&bytes),
            sizes.offset,
            sizes.length,
            bytes.len(),
        )?;
        push(
            out,
            Link {
                name: m.name,
                target: m.target,
            },
        )?;
    }
    Ok(())
}
