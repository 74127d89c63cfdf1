//! Reading a CPU map: which socket and core each CPU of a measured matrix
//! is, as `lscpu -p=CPU,CORE,SOCKET` (or plain `lscpu -p`) prints it on the
//! measured machine, so that a matrix numbered in any way can be put in the
//! model's numbering.
//!
//! The listing (util-linux's parsable output): lines starting with `#` are
//! comments, the last of them naming the columns (`# CPU,Core,Socket` or,
//! for `lscpu -p`, `# CPU,Core,Socket,Node,,L1d,L1i,L2,L3`); every other
//! line is one CPU, its fields separated by commas. Core and socket numbers
//! are lscpu's logical ones (`-p` without `-y`): each distinct core and
//! socket of the machine gets a number from 0 up. Without a column header,
//! the first three columns are taken as CPU, core and socket, the order of
//! both of lscpu's forms.
//!
//! On the model's side, CPU numbers are Linux's order on the servers of
//! `data/c2c`: the first thread of every core, socket by socket, then the
//! second thread of every core. A CPU of the map becomes the model CPU of
//! the same socket, of the core with the same rank among its socket's cores
//! (cores ordered by their lscpu number) and of the same rank among its
//! core's threads (ordered by CPU number).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// A malformed or ill-fitting map, at a line of its file (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMapError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for CpuMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for CpuMapError {}

/// One listed CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Listed {
    cpu: u32,
    core: u32,
    socket: u32,
    /// Where it is listed (from 1).
    line: usize,
}

/// A parsed CPU map: where each CPU of a matrix is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMap {
    /// The file, for errors.
    file: String,
    /// In file order.
    listed: Vec<Listed>,
    /// The line of the last comment, for errors about the whole listing.
    end_line: usize,
}

/// The machine a map is placed on: the counts of its topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineCounts {
    pub sockets: u32,
    /// nodes_per_socket x l3_per_node x cores_per_l3.
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
}

impl CpuMap {
    /// The file the map was read from.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// CPUs listed.
    pub fn cpus(&self) -> u32 {
        self.listed.len() as u32
    }

    fn error(&self, line: usize, message: String) -> CpuMapError {
        CpuMapError {
            file: self.file.clone(),
            line,
            message,
        }
    }

    /// The model's CPU number of each of the matrix's `matrix_cpus` CPUs
    /// (index: the matrix's CPU), on a machine of `machine`'s counts. The
    /// map must list each of the matrix's CPUs once, every socket number
    /// below the machine's sockets, no more cores in a socket than the
    /// machine has, and no more threads in a core.
    pub fn to_model(
        &self,
        matrix_cpus: u32,
        machine: MachineCounts,
    ) -> Result<Vec<u32>, CpuMapError> {
        if self.cpus() != matrix_cpus {
            return Err(self.error(
                self.listed.last().map_or(self.end_line, |l| l.line),
                format!(
                    "the map lists {} CPU(s), the matrix has {matrix_cpus} (one per row); \
                     list each of the matrix's CPUs 0-{} once, as `lscpu -p=CPU,CORE,SOCKET` \
                     prints them on the measured machine",
                    self.cpus(),
                    matrix_cpus.saturating_sub(1)
                ),
            ));
        }
        let total_cores = machine.sockets * machine.cores_per_socket;
        // Cores by socket, in lscpu order; threads by core, in CPU order.
        let mut cores_of_socket: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut threads_of_core: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        let mut socket_of_core: BTreeMap<u32, (u32, usize)> = BTreeMap::new();
        for l in &self.listed {
            if l.cpu >= matrix_cpus {
                return Err(self.error(
                    l.line,
                    format!(
                        "CPU {} is not a CPU of the matrix, which has {matrix_cpus} (0-{})",
                        l.cpu,
                        matrix_cpus.saturating_sub(1)
                    ),
                ));
            }
            if l.socket >= machine.sockets {
                return Err(self.error(
                    l.line,
                    format!(
                        "CPU {} is on socket {}, but the machine file has {} socket(s) (0-{}); \
                         lscpu -p numbers sockets from 0",
                        l.cpu,
                        l.socket,
                        machine.sockets,
                        machine.sockets - 1
                    ),
                ));
            }
            if l.core >= total_cores {
                return Err(self.error(
                    l.line,
                    format!(
                        "CPU {} is on core {}, but the machine file has {total_cores} cores \
                         (0-{}: {} socket(s) x {} cores per socket); lscpu -p numbers the \
                         machine's cores from 0 (logical numbers, not those of `lscpu -y`)",
                        l.cpu,
                        l.core,
                        total_cores - 1,
                        machine.sockets,
                        machine.cores_per_socket
                    ),
                ));
            }
            match socket_of_core.get(&l.core) {
                Some(&(socket, line)) if socket != l.socket => {
                    return Err(self.error(
                        l.line,
                        format!(
                            "core {} is on socket {} here and on socket {socket} at line \
                             {line}; a core is on one socket",
                            l.core, l.socket
                        ),
                    ))
                }
                Some(_) => {}
                None => {
                    socket_of_core.insert(l.core, (l.socket, l.line));
                    let cores = cores_of_socket.entry(l.socket).or_default();
                    cores.push(l.core);
                    if cores.len() as u32 > machine.cores_per_socket {
                        return Err(self.error(
                            l.line,
                            format!(
                                "core {} makes {} cores listed on socket {}, but the machine \
                                 file has {} cores per socket (nodes_per_socket x l3_per_node \
                                 x cores_per_l3)",
                                l.core,
                                cores.len(),
                                l.socket,
                                machine.cores_per_socket
                            ),
                        ));
                    }
                }
            }
            let threads = threads_of_core.entry((l.socket, l.core)).or_default();
            threads.push(l.cpu);
            if threads.len() as u32 > machine.threads_per_core {
                return Err(self.error(
                    l.line,
                    format!(
                        "CPU {} is thread {} of core {}, but the machine file has {} thread(s) \
                         per core (threads_per_core)",
                        l.cpu,
                        threads.len(),
                        l.core,
                        machine.threads_per_core
                    ),
                ));
            }
        }
        for cores in cores_of_socket.values_mut() {
            cores.sort_unstable();
        }
        for threads in threads_of_core.values_mut() {
            threads.sort_unstable();
        }
        let cores_total = total_cores;
        let mut model = vec![0; matrix_cpus as usize];
        for l in &self.listed {
            let rank_in_socket = cores_of_socket[&l.socket]
                .iter()
                .position(|&c| c == l.core)
                .unwrap_or(0) as u32;
            let thread = threads_of_core[&(l.socket, l.core)]
                .iter()
                .position(|&c| c == l.cpu)
                .unwrap_or(0) as u32;
            model[l.cpu as usize] =
                thread * cores_total + l.socket * machine.cores_per_socket + rank_in_socket;
        }
        Ok(model)
    }
}

/// The columns a listing gives, by position.
struct Columns {
    cpu: usize,
    core: usize,
    socket: usize,
}

/// The columns a header comment names (`# CPU,Core,Socket,...`), if it
/// names all three.
fn header_columns(comment: &str) -> Option<Columns> {
    let names: Vec<String> = comment
        .split(',')
        .map(|n| n.trim().to_ascii_lowercase())
        .collect();
    let at = |want: &str| names.iter().position(|n| n == want);
    Some(Columns {
        cpu: at("cpu")?,
        core: at("core")?,
        socket: at("socket")?,
    })
}

/// Parses a map; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<CpuMap, CpuMapError> {
    let err = |line: usize, message: String| CpuMapError {
        file: file.to_string(),
        line,
        message,
    };
    let mut columns = Columns {
        cpu: 0,
        core: 1,
        socket: 2,
    };
    let mut listed: Vec<Listed> = Vec::new();
    let mut line_of_cpu: BTreeMap<u32, usize> = BTreeMap::new();
    let mut end_line = 1;
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        let line = line.strip_suffix('\r').unwrap_or(line).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            end_line = number;
            if let Some(found) = header_columns(comment) {
                if !listed.is_empty() {
                    return Err(err(
                        number,
                        "a column header after the CPUs; the header comes first, as lscpu \
                         prints it"
                            .into(),
                    ));
                }
                columns = found;
            }
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let field = |at: usize, name: &str| -> Result<u32, CpuMapError> {
            let Some(value) = fields.get(at) else {
                return Err(err(
                    number,
                    format!(
                        "`{line}` has {} field(s), no {name} (field {}); expected \
                         `CPU,CORE,SOCKET` as `lscpu -p=CPU,CORE,SOCKET` prints it, or \
                         `lscpu -p`'s columns",
                        fields.len(),
                        at + 1
                    ),
                ));
            };
            value.parse().map_err(|_| {
                err(
                    number,
                    format!(
                        "{name} `{value}` is not a number; expected a whole number from 0, as \
                         `lscpu -p` prints it (`-` is a CPU lscpu could not place: leave \
                         offline CPUs out of the measurement and of the map)"
                    ),
                )
            })
        };
        let entry = Listed {
            cpu: field(columns.cpu, "CPU")?,
            core: field(columns.core, "core")?,
            socket: field(columns.socket, "socket")?,
            line: number,
        };
        if let Some(first) = line_of_cpu.insert(entry.cpu, number) {
            return Err(err(
                number,
                format!(
                    "CPU {} is listed twice (first at line {first}); each CPU is one line",
                    entry.cpu
                ),
            ));
        }
        listed.push(entry);
    }
    if listed.is_empty() {
        return Err(err(
            end_line,
            "the map lists no CPU; expected the output of `lscpu -p=CPU,CORE,SOCKET` (one \
             `CPU,CORE,SOCKET` line per CPU, comments starting with `#`)"
                .into(),
        ));
    }
    Ok(CpuMap {
        file: file.to_string(),
        listed,
        end_line,
    })
}

/// Reads (at most `limit_bytes`) and parses a map file.
pub fn read(path: &Path, limit_bytes: u64) -> Result<CpuMap, String> {
    let text = super::matrix::read_data_text(path, limit_bytes, "CPU map")?;
    parse(&path.display().to_string(), &text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_BY_TWO: MachineCounts = MachineCounts {
        sockets: 2,
        cores_per_socket: 2,
        threads_per_core: 2,
    };

    #[test]
    fn lscpu_p_default_columns_with_caches_are_read() {
        // lscpu -p on 2 sockets x 2 cores x 2 threads, sockets interleaved.
        let text = "# The following is the parsable format, which can be fed to other\n\
                    # programs. Each different item in every column has an unique ID\n\
                    # starting from zero.\n\
                    # CPU,Core,Socket,Node,,L1d,L1i,L2,L3\n\
                    0,0,0,0,,0,0,0,0\n1,1,1,1,,1,1,1,1\n2,2,0,0,,2,2,2,0\n3,3,1,1,,3,3,3,1\n\
                    4,0,0,0,,0,0,0,0\n5,1,1,1,,1,1,1,1\n6,2,0,0,,2,2,2,0\n7,3,1,1,,3,3,3,1\n";
        let map = parse("m.lscpu", text).unwrap();
        // Model: threads 0 of cores 0-3 (socket 0: 0, 1; socket 1: 2, 3),
        // then threads 1.
        assert_eq!(
            map.to_model(8, TWO_BY_TWO).unwrap(),
            vec![0, 2, 1, 3, 4, 6, 5, 7]
        );
    }

    #[test]
    fn columns_in_another_order_follow_the_header() {
        let text = "# Socket,CPU,Core\n0,0,0\n0,1,0\n";
        let map = parse("m", text).unwrap();
        let machine = MachineCounts {
            sockets: 1,
            cores_per_socket: 1,
            threads_per_core: 2,
        };
        assert_eq!(map.to_model(2, machine).unwrap(), vec![0, 1]);
    }

    #[test]
    fn bad_listings_name_the_line_and_what_is_valid() {
        let e = parse("m", "# CPU,Core,Socket\n0,0,0\n0,1,0\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("listed twice (first at line 2)"), "{e}");
        let e = parse("m", "0,x,0\n").unwrap_err();
        assert!(e.message.contains("core `x` is not a number"), "{e}");
        let e = parse("m", "0,0\n").unwrap_err();
        assert!(e.message.contains("no socket"), "{e}");
        let e = parse("m", "# only comments\n").unwrap_err();
        assert!(e.message.contains("lists no CPU"), "{e}");
    }

    #[test]
    fn a_map_that_does_not_fit_the_machine_is_an_error() {
        let map = parse("m", "0,0,0\n1,1,2\n").unwrap();
        let e = map.to_model(2, TWO_BY_TWO).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("socket 2, but the machine file has 2"),
            "{e}"
        );
        let map = parse("m", "0,0,0\n1,9,0\n").unwrap();
        let e = map.to_model(2, TWO_BY_TWO).unwrap_err();
        assert!(
            e.message
                .contains("core 9, but the machine file has 4 cores"),
            "{e}"
        );
        let map = parse("m", "0,0,0\n1,1,0\n2,2,0\n").unwrap();
        let e = map.to_model(3, TWO_BY_TWO).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.message
                .contains("core 2 makes 3 cores listed on socket 0"),
            "{e}"
        );
        let map = parse("m", "0,0,0\n1,0,0\n2,0,0\n").unwrap();
        let e = map.to_model(3, TWO_BY_TWO).unwrap_err();
        assert!(e.message.contains("thread 3 of core 0"), "{e}");
        let map = parse("m", "0,0,0\n1,0,1\n").unwrap();
        let e = map.to_model(2, TWO_BY_TWO).unwrap_err();
        assert!(e
            .message
            .contains("core 0 is on socket 1 here and on socket 0 at line 1"));
        let map = parse("m", "0,0,0\n").unwrap();
        let e = map.to_model(2, TWO_BY_TWO).unwrap_err();
        assert!(
            e.message.contains("lists 1 CPU(s), the matrix has 2"),
            "{e}"
        );
        let map = parse("m", "0,0,0\n5,1,0\n").unwrap();
        let e = map.to_model(2, TWO_BY_TWO).unwrap_err();
        assert!(
            e.message.contains("CPU 5 is not a CPU of the matrix"),
            "{e}"
        );
    }
}
