//! Dims as the command line gives them (`--shape`, `--chunks`, `--frame`).

/// Dims as the command line gives them: comma-separated, first fastest; the empty
/// string is no dims (a 0-d scalar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dims(pub Vec<u64>);

impl std::str::FromStr for Dims {
    type Err = String;

    fn from_str(s: &str) -> Result<Dims, String> {
        if s.trim().is_empty() {
            return Ok(Dims(Vec::new()));
        }
        s.split(',')
            .map(|d| {
                d.trim().parse::<u64>().map_err(|_| {
                    format!(
                        "{d:?} is not a dim (dims are whole numbers, comma-separated; '' for none)"
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map(Dims)
    }
}
