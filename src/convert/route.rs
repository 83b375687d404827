//! [`convert()`]: any input into any output, one array by [`copy`], or a tree of them
//! (an `.npz` archive, a dataset folder, a Zarr group) member by member.

use std::path::{Path, PathBuf};

use super::local::{create_local, several};
use super::open::{create, open, url_of};
use super::options::{ConvertOptions, Format};
use super::plan::{copy, Overall};
use super::{Converted, Source};
use crate::error::{io_at, Error, ErrorKind, Result};
use crate::layout::Progress;
use crate::replace::{check_folder, refuse_existing};

/// Converts `input` into `output`: any format into any other, the input told by its
/// contents and the output by its name ([`Format`]), either or both in object storage
/// (`s3://`), box by box in bounded memory ([`copy`](super::copy)). An `.npz`
/// archive becomes a folder `output` of one `NAME.ra` per member (made if missing), a
/// Zarr group of one array per member, or a dataset in object storage; one of a single
/// array converts to any output. The logical array is kept (FORMAT.md
/// section 7): its shape, its values, and the labels and attributes its format can
/// carry. Nothing is left at `output` when the conversion fails.
///
/// A `.ra` input is mapped: no other program may rewrite or truncate an input while it
/// is converted (rastore's own writers never do; they rename a new file over the old).
pub fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    // An output no writer makes (an `.nc`, an `.h5`) is refused before the input is
    // read.
    if matches!(
        Format::by_extension(output),
        Some(Format::NetCdf3 | Format::Hdf5)
    ) {
        return Format::of_output(output).map(|_| Converted::default());
    }
    // (A path past a file, naming an array in it, is opened below.)
    if url_of(input).is_none() && !input.is_dir() && Format::of(input).ok() == Some(Format::Npz) {
        return npz_to_folder(input, output, options, progress);
    }
    if url_of(output).is_none() {
        options.check_output(output)?;
    }
    #[cfg(feature = "zarr")]
    if let Some(done) = super::group::convert(input, output, options, progress)? {
        return Ok(done);
    }
    let source = open(input, options)?;
    let sink = create(output, source.desc().clone(), options)?;
    copy(source, sink, progress)
}

/// Writes `data`, the native column-major bytes of the array `desc` describes, to
/// `output` in the format its name says ([`Format::by_extension`]), as [`convert()`]
/// writes one array there: a `.ra`, `.npy` or `.png` file; a `.zarr` group holding the
/// array under the output's name without its extension (a bare array with
/// [`ConvertOptions::zarr_array`]); an `.npz` of it under that name. On this machine
/// or in object storage (`s3://`); nothing is left at `output` when it fails.
pub fn write_array(
    output: &Path,
    desc: super::Desc,
    data: &[u8],
    options: &ConvertOptions,
) -> Result<Converted> {
    if data.len() as u64 != desc.nbytes() {
        return Err(Error::from(ErrorKind::InvalidArgument(format!(
            "{} data bytes for {} of dims {:?} ({} bytes)",
            data.len(),
            desc.dtype,
            desc.dims,
            desc.nbytes()
        )))
        .at(output));
    }
    if url_of(output).is_none() {
        options.check_output(output)?;
    }
    #[cfg(feature = "zarr")]
    {
        let tree = match Format::by_extension(output) {
            Some(Format::Zarr) => !options.zarr_bare(),
            Some(Format::Npz) => true,
            _ => false,
        };
        if tree {
            let source = super::memory::MemorySource {
                desc,
                data: data.to_vec(),
                shown: output.to_path_buf(),
            };
            let name = super::refs::array_name(output);
            return super::group::source_into_group(
                Box::new(source),
                name,
                output,
                options,
                &mut |_, _| (),
            );
        }
    }
    let sink = create(output, desc.clone(), options)?;
    let source = super::memory::MemorySource {
        desc,
        data,
        shown: output.to_path_buf(),
    };
    super::plan::fill(&source, sink.as_ref(), &mut |_, _| ())?;
    sink.commit()
}

/// Each member of the archive `input` as `out/NAME.ra` (or its one member as the output
/// `out` names, of any format; or each an array of the Zarr group `out`), converted in
/// turn; a deflated member is inflated beside the output first.
fn npz_to_folder(
    input: &Path,
    out: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let members = crate::formats::npz::engine::members(input)?;
    match (Format::by_extension(out), members.as_slice()) {
        (Some(Format::Npz), _) => return Format::of_output(out).map(|_| Converted::default()),
        #[cfg(feature = "zarr")]
        (Some(Format::Zarr), [(name, _)]) if !options.zarr_bare() => {
            if url_of(out).is_none() {
                options.check_output(out)?;
            }
            return super::group::one_into_group(input, name, out, options, progress);
        }
        #[cfg(feature = "zarr")]
        (Some(Format::Zarr), _) if !options.zarr_bare() => {
            return npz_into_tree(input, out, options, progress);
        }
        (Some(_), [(_, m)]) => {
            // One array: into any output, anywhere.
            let scratch = match url_of(out) {
                Some(_) => std::env::temp_dir(),
                None => {
                    options.check_output(out)?;
                    crate::replace::parent_dir(out).to_path_buf()
                }
            };
            let source = crate::formats::npz::engine::MemberSource::open(input, m, &scratch)?;
            let sink = create(out, source.desc().clone(), options)?;
            return copy(Box::new(source), sink, progress);
        }
        (Some(_), _) => return Err(several(input, &members, Some(out))),
        (None, _) => {}
    }
    if url_of(out).is_some() {
        return npz_into_tree(input, out, options, progress);
    }
    check_folder(out)?;
    let outputs: Vec<PathBuf> = members
        .iter()
        .map(|(name, _)| out.join(format!("{name}.ra")))
        .collect();
    for o in &outputs {
        refuse_existing(o, options.placement())?;
    }
    let made = !out.is_dir();
    if made {
        std::fs::create_dir(out).map_err(io_at("create folder", out))?;
    }
    let mut result = Converted::default();
    let mut overall = Overall::default();
    for (k, ((_, m), o)) in members.iter().zip(&outputs).enumerate() {
        let done =
            crate::formats::npz::engine::MemberSource::open(input, m, out).and_then(|source| {
                let sink = create_local(o, source.desc().clone(), options)?;
                overall.copy(Box::new(source), sink, progress)
            });
        match done {
            Ok(done) => result.stored_raw |= done.stored_raw,
            Err(e) => {
                // Nothing is left of a failed conversion: the members already written,
                // and the folder if it made it (a sink removes its own partial file).
                for o in &outputs[..k] {
                    let _ = std::fs::remove_file(o);
                }
                if made {
                    let _ = std::fs::remove_dir(out);
                }
                return Err(e);
            }
        }
    }
    if members.is_empty() && made {
        // An archive of no arrays is still a dataset (FORMAT.md §10): a `dataset.yaml`
        // of no attributes, as a tree of none is written, not an empty folder.
        crate::dataset::write_empty(out)?;
    }
    Ok(result)
}

/// The arrays of the archive `input` as a tree at `out`: a Zarr group, or a dataset in
/// object storage (a prefix ending `/`). A deflated member is inflated beside a local
/// output, or in the temporary folder for one in object storage.
#[cfg(feature = "zarr")]
fn npz_into_tree(
    input: &Path,
    out: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let scratch = match url_of(out) {
        Some(_) => std::env::temp_dir(),
        None => {
            options.check_output(out)?;
            crate::replace::parent_dir(out).to_path_buf()
        }
    };
    super::group::Tree::of_npz(input, &scratch)?.write(out, options, progress)
}

#[cfg(not(feature = "zarr"))]
fn npz_into_tree(
    _input: &Path,
    out: &Path,
    _options: &ConvertOptions,
    _progress: Progress,
) -> Result<Converted> {
    use crate::error::{Error, ErrorKind};
    Err(Error::from(ErrorKind::Unsupported(
        "an .npz of several arrays into object storage, in a build without the `zarr` \
         feature: convert it to a local folder, then upload each .ra"
            .into(),
    ))
    .at(out))
}
