//! Many inputs of one type and shape as one source (`ra stack`): input `i` is index
//! `i` of a new last axis. Inputs are opened as their frames are read, not all at
//! once (a stack of ten thousand files holds a few open), and each is checked then.

use std::path::{Path, PathBuf};

use super::options::ConvertOptions;
use super::{Block, Desc, Grain, Source};
use crate::error::{Error, ErrorKind, Result};

/// The inputs, and what each must be.
struct Stacked {
    inputs: Vec<PathBuf>,
    options: ConvertOptions,
    /// Each input's.
    frame: Desc,
    desc: Desc,
}

/// The inputs (any format [`open`](super::open) reads, the first's type and shape
/// for all) stacked along a new last axis.
pub fn stack(inputs: &[PathBuf], options: &ConvertOptions) -> Result<Box<dyn Source>> {
    let Some(first) = inputs.first() else {
        return Err(ErrorKind::InvalidArgument("nothing to stack".into()).into());
    };
    let frame = super::open::open(first, options)?.desc().clone();
    let mut dims = frame.dims.clone();
    dims.push(inputs.len() as u64);
    let desc = frame.reshaped(dims)?;
    Ok(Box::new(Stacked {
        inputs: inputs.to_vec(),
        options: options.clone(),
        frame,
        desc,
    }))
}

impl Source for Stacked {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        let mut one = self.frame.dims.clone();
        one.push(1);
        Grain::Chunks(one)
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        let n = self.frame.dims.len();
        let inner = Block {
            origin: block.origin[..n].to_vec(),
            shape: block.shape[..n].to_vec(),
        };
        let bytes = (inner.count() * self.frame.dtype.elbyte) as usize;
        let first = block.origin[n];
        for (j, dst) in out.chunks_mut(bytes.max(1)).enumerate() {
            let path = &self.inputs[(first + j as u64) as usize];
            let source = super::open::open(path, &self.options)?;
            let d = source.desc();
            if d.dtype != self.frame.dtype || d.dims != self.frame.dims {
                return Err(Error::from(ErrorKind::InvalidArgument(format!(
                    "{} {:?} differs from {}: {} {:?}",
                    d.dtype,
                    d.dims,
                    self.inputs[0].display(),
                    self.frame.dtype,
                    self.frame.dims
                )))
                .at(path));
            }
            source.read_box(&inner, dst)?;
        }
        Ok(())
    }

    fn shown(&self) -> &Path {
        &self.inputs[0]
    }
}
