//! Progress bars: on a terminal, for large jobs only.

use std::io::{self, IsTerminal};

/// Inputs larger than this get a progress bar on a terminal.
const PROGRESS_BYTES: u64 = 64 << 20;

/// A progress bar over `total` bytes, on a terminal and for large jobs only.
pub fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    (total > PROGRESS_BYTES && io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}
