//! The measured core-to-core latency matrices shipped in `data/c2c/`
//! (copied from `shared/calibration/c2c/`), one entry per file: which
//! machine was measured, how its CPUs are numbered, the clock it is assumed
//! to have run at, the preset it stands for, and how that preset is adjusted
//! to the measured SKU before the two are compared (`bounce validate`).
//!
//! This crate reads no files: the facts are copied here with their sources.
//! Source tags `[Sx]` are those of `shared/calibration/calibration.md` §13;
//! "summary table" is `shared/calibration/c2c_summary_table.md`, whose pair
//! counts `n` (physical cores only) fix the core counts: same-socket
//! n = c(c-1)/2 and cross-socket n = c^2 for c cores per socket.
//!
//! Every matrix is the one-way latency (half a round trip) of the
//! `core-to-core-latency` compare-and-swap ping-pong (calibration.md §0.1),
//! lower-triangular, indexed by Linux CPU number; the SMT sibling of CPU `i`
//! is `i + physical cores` on every machine with SMT (§0.1, checked as the
//! minimum-latency partner of each CPU).

use sim_core::topology::MachineSpec;
use std::fmt;

/// Whose machine: decides how pairs are classified (AMD's cross-CCD pairs
/// are split by whether they sit on the line's home socket).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Intel,
    Amd,
}

/// What is known of the clock during the measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockBasis {
    /// The SKU's maximum boost clock, documented in the cited source. The
    /// clock during the run is not recorded (calibration.md §0.3); a
    /// two-thread ping-pong leaves the rest of the package idle, so the two
    /// cores are assumed to run at their maximum boost.
    DocumentedMaxBoost,
    /// As above, but the boost figure itself is the vendor's published one,
    /// quoted without a retrieved source (calibration.md §14 lists it as
    /// not found or does not list it).
    AssumedMaxBoost,
    /// A user's machine file's `clock_mhz`, whatever clock it took (the
    /// part's base or its boost, or the clock its legs were fitted at).
    AsGiven,
}

impl ClockBasis {
    pub fn describe(self) -> &'static str {
        match self {
            ClockBasis::DocumentedMaxBoost => "documented max boost",
            ClockBasis::AssumedMaxBoost => "assumed max boost",
            ClockBasis::AsGiven => "as given",
        }
    }
}

/// One shipped matrix and the machine it measured.
#[derive(Clone, Debug)]
pub struct MeasuredMachine {
    /// File name in `data/c2c/`.
    pub file: &'static str,
    /// The measured machine, as a reader would name it.
    pub sku: &'static str,
    /// Where the matrix comes from.
    pub source: &'static str,
    pub vendor: Vendor,
    /// The preset reference (`NAME` or `NAME:MODE`) this machine stands for.
    pub preset: &'static str,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Cores sharing one L3 domain, where the silicon fixes it (an AMD CCX);
    /// `None` on Intel, whose mesh L3 spans the node, so the preset's L3
    /// domains are kept and the SKU's cores spread over them.
    pub cores_per_l3: Option<u32>,
    /// L3 domains (CCXs) per CCD, for classification: 2 on Bergamo, 1 on
    /// Milan and Genoa; on Naples a die holds 2 CCXs and is a NUMA node.
    /// 1 on Intel (no CCD level).
    pub ccx_per_ccd: u32,
    /// What the level above the L3 domain is called in the report.
    pub ccd_name: &'static str,
    /// Rows (CPUs) of the matrix: Linux CPUs `0..cpus_measured`.
    pub cpus_measured: u32,
    /// How the measured CPUs map onto the machine's.
    pub coverage: &'static str,
    /// The clock the simulated machine runs at, to compare in nanoseconds.
    pub clock_mhz: u64,
    pub clock_basis: ClockBasis,
    pub clock_source: &'static str,
    /// Where the bounced line was homed during the run.
    pub home: Home,
    /// Why: what in the matrix shows it.
    pub home_evidence: &'static str,
    /// Classes this matrix is known to miss, each with the documented
    /// conflict that no single preset can meet. The report still shows them
    /// outside the bound; the validation test only accepts these.
    pub known_misses: &'static [KnownMiss],
    /// The classes (by key, as [`KnownMiss::class`]) whose measured medians
    /// set numbers of the preset: comparing them checks the fit
    /// ([`Role::Calibration`]); every other class of the matrix was held
    /// out and is a [`Role::Prediction`]. Empty: the whole matrix is held
    /// out. `None`: not known (a user's own matrix).
    pub fitted_classes: Option<&'static [&'static str]>,
    /// Where the fit is written: the preset's `targets` (each cites the
    /// matrix its median comes from) in `models/src/presets/`.
    pub role_source: &'static str,
}

/// What one class of a matrix was to its preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Its measured median set a number of the preset: the comparison
    /// checks the fit, it does not test the model.
    Calibration,
    /// Held out: no number of the preset was taken from it, so the
    /// comparison is a prediction.
    Prediction,
    /// Not known: a user's own matrix, which the machine file may or may
    /// not have been fitted on.
    Unknown,
}

impl Role {
    /// The name in `bounce validate`'s table, CSV and JSON.
    pub fn key(self) -> &'static str {
        match self {
            Role::Calibration => "calibration",
            Role::Prediction => "prediction",
            Role::Unknown => "unknown",
        }
    }
}

/// A class of pairs (by its key, as `bounce validate` names classes:
/// `smt`, `same-l3`, `cross-ccx-same-ccd`, `cross-l3-same-socket`,
/// `cross-ccd-home-socket`, `cross-ccd-other-socket`, `cross-socket`) that a
/// matrix is known to miss, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownMiss {
    pub class: &'static str,
    pub reason: &'static str,
}

/// Where the measured run had the bounced line's home.
///
/// The benchmark keeps the flag in a struct built by its main thread
/// (`Bench::new()` in `src/bench/cas.rs` of \[S1\] and \[S2\]), so the line is
/// homed where that thread first touched the page (calibration.md §0.2,
/// \[S3\]; data/c2c/README.md: "usually node 0"). The main thread is not
/// pinned, so that node is not always node 0: each AMD entry derives it from
/// its matrix, where the socket holding the home has the fast cross-CCD
/// pairs and the other socket pays about 2x.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Node `node_in_socket` (counted from 0 within the socket) of `socket`.
    Node { socket: u32, node_in_socket: u32 },
    /// On the node of each pair's first CPU: the matrix shows no
    /// non-home-socket penalty anywhere, as if the page followed the pinned
    /// threads (inference: Linux automatic NUMA balancing migrates a page
    /// towards the node that touches it).
    FirstCpu,
}

/// The home of the line in a simulated pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LineHome {
    /// One node for every pair.
    Node(u32),
    /// The node of the pair's first CPU (the one that moves first).
    FirstCpu,
}

impl Home {
    /// The home on a machine (whose node count per socket it needs).
    pub fn on(self, spec: &MachineSpec) -> Result<LineHome, String> {
        match self {
            Home::FirstCpu => Ok(LineHome::FirstCpu),
            Home::Node {
                socket,
                node_in_socket,
            } => {
                if socket >= spec.sockets || node_in_socket >= spec.nodes_per_socket {
                    return Err(format!(
                        "the line's home, node {node_in_socket} of socket {socket}, does not exist \
                         on a machine of {} socket(s) x {} node(s)",
                        spec.sockets, spec.nodes_per_socket
                    ));
                }
                Ok(LineHome::Node(
                    socket * spec.nodes_per_socket + node_in_socket,
                ))
            }
        }
    }

    pub fn describe(self) -> String {
        match self {
            Home::Node {
                socket,
                node_in_socket,
            } => format!("node {node_in_socket} of socket {socket}"),
            Home::FirstCpu => "the node of each pair's first CPU".into(),
        }
    }
}

impl MeasuredMachine {
    /// Every CPU of the machine, measured or not.
    pub fn cpus_total(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    /// The preset's name without its modes.
    pub fn preset_name(&self) -> &'static str {
        self.preset.split(':').next().unwrap_or(self.preset)
    }

    /// The role of one class of this matrix (its key, as
    /// [`KnownMiss::class`]).
    pub fn role(&self, class_key: &str) -> Role {
        match self.fitted_classes {
            None => Role::Unknown,
            Some(fitted) if fitted.contains(&class_key) => Role::Calibration,
            Some(_) => Role::Prediction,
        }
    }
}

/// One parameter the adjustment changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub key: &'static str,
    pub from: u64,
    pub to: u64,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} -> {}", self.key, self.from, self.to)
    }
}

/// The preset adjusted to the measured SKU.
#[derive(Clone, Debug)]
pub struct Adjusted {
    pub spec: MachineSpec,
    /// What changed, in the order of `MachineSpec`'s fields; empty when the
    /// preset already is the measured SKU.
    pub changes: Vec<Change>,
}

/// `d` divides `n` (and is not 0).
fn divides(d: u32, n: u32) -> bool {
    n.checked_rem(d) == Some(0)
}

/// Adjusts a preset to the measured SKU: its core count per L3 domain and
/// per socket, and its clock. Latencies stay in core cycles, so they scale
/// with the clock. Sockets, NUMA nodes and SMT come from the preset (and
/// its modes) and must already match: a mismatch is an error saying what
/// differs.
pub fn adjust(preset: &MachineSpec, machine: &MeasuredMachine) -> Result<Adjusted, String> {
    let mut spec = preset.clone();
    if spec.sockets != machine.sockets {
        return Err(format!(
            "preset `{}` has {} socket(s), the measured machine {}",
            machine.preset, spec.sockets, machine.sockets
        ));
    }
    if spec.threads_per_core != machine.threads_per_core {
        return Err(format!(
            "preset `{}` has {} thread(s) per core, the measured machine {}{}",
            machine.preset,
            spec.threads_per_core,
            machine.threads_per_core,
            if machine.threads_per_core == 1 {
                " (SMT off)"
            } else {
                ""
            }
        ));
    }
    let nodes = spec.nodes_per_socket;
    match machine.cores_per_l3 {
        Some(per_l3) => {
            let per_node = machine.cores_per_socket / nodes;
            if !divides(nodes, machine.cores_per_socket) || !divides(per_l3, per_node) {
                return Err(format!(
                    "{} cores per socket do not split into {} node(s) of {}-core L3 domains",
                    machine.cores_per_socket, nodes, per_l3
                ));
            }
            spec.cores_per_l3 = per_l3;
            spec.l3_per_node = per_node / per_l3;
        }
        None => {
            let domains = nodes * spec.l3_per_node;
            if !divides(domains, machine.cores_per_socket) {
                return Err(format!(
                    "{} cores per socket do not split evenly over the preset's {} L3 domain(s) per socket",
                    machine.cores_per_socket, domains
                ));
            }
            spec.cores_per_l3 = machine.cores_per_socket / domains;
        }
    }
    if !divides(machine.ccx_per_ccd, spec.l3_per_node) {
        return Err(format!(
            "{} L3 domain(s) per node do not group into {}s of {}",
            spec.l3_per_node, machine.ccd_name, machine.ccx_per_ccd
        ));
    }
    spec.clock_mhz = machine.clock_mhz;
    let mut changes = Vec::new();
    for (key, from, to) in [
        (
            "L3 domains per node",
            preset.l3_per_node as u64,
            spec.l3_per_node as u64,
        ),
        (
            "cores per L3 domain",
            preset.cores_per_l3 as u64,
            spec.cores_per_l3 as u64,
        ),
        ("clock MHz", preset.clock_mhz, spec.clock_mhz),
    ] {
        if from != to {
            changes.push(Change { key, from, to });
        }
    }
    spec.name = if changes.is_empty() {
        preset.name.clone()
    } else {
        format!("{} (adjusted to {})", preset.name, machine.sku)
    };
    Ok(Adjusted { spec, changes })
}

/// Every shipped matrix, in `data/c2c/README.md` order.
pub const MEASURED: &[MeasuredMachine] = &[
    MeasuredMachine {
        file: "icelake-sp-8375c-2s.csv",
        sku: "2 x Xeon Platinum 8375C (Ice Lake-SP, AWS c6i.metal)",
        source: "[S1] nviennot/core-to-core-latency @ 96a943a, results/Intel(R) Xeon(R) Platinum \
                 8375C CPU @ 2.90GHz.csv",
        vendor: Vendor::Intel,
        // calibration.md §0.4: the 8375C is the same die and mesh as the
        // 8380 the preset describes.
        preset: "icelake-sp-2s",
        // Summary table: SMT n=64, same socket n=496 = 32*31/2, cross
        // n=1024 = 32^2: 2 sockets x 32 cores, SMT, 128 CPUs (data/c2c/README.md).
        sockets: 2,
        cores_per_socket: 32,
        threads_per_core: 2,
        cores_per_l3: None,
        ccx_per_ccd: 1,
        ccd_name: "die",
        cpus_measured: 128,
        coverage: "CPUs 0-63 are the cores (0-31 socket 0, 32-63 socket 1), 64-127 their SMT \
                   siblings (i + 64)",
        // Assumed: 3.5 GHz, AWS's published turbo figure for c6i (8375C);
        // the model string gives only the 2.9 GHz base [S1]; calibration.md
        // does not list the boost.
        clock_mhz: 3500,
        clock_basis: ClockBasis::AssumedMaxBoost,
        clock_source: "AWS c6i: 3.5 GHz turbo (not retrieved); base 2.9 GHz per model string [S1]",
        home: Home::Node {
            socket: 0,
            node_in_socket: 0,
        },
        home_evidence: "it does not matter on Intel, whose snoop filter in the requester's \
                        socket resolves the transfer: same-socket medians 51.2 / 51.3 ns on the \
                        two sockets (summary table)",
        known_misses: &[],
        fitted_classes: Some(&["smt", "same-l3", "cross-socket"]),
        role_source: "icelake-sp-2s targets smt, same-socket, same-socket-non-home and cross-socket all cite [S1] 8375C (models/src/presets/intel.rs)",
    },
    MeasuredMachine {
        file: "icelake-sp-8360y-2s.csv",
        sku: "2 x Xeon Platinum 8360Y (Ice Lake-SP)",
        source: "[S2] KCORES/core-to-core-latency-plus @ 264ea0a, results/Dual Intel Xeon \
                 Platinum 8360Y 2.40GHz by-herver.csv",
        vendor: Vendor::Intel,
        preset: "icelake-sp-2s",
        // Documented: "Core Count: 36" per socket, two sockets, in dmidecode
        // of a 2 x 8360Y (gjbex/Code-optimization @ 5d59556,
        // info/icelake_dmidecode_processor.txt, the machine of [S16]);
        // summary table: same socket n=630 = 36*35/2, cross n=1296 = 36^2.
        sockets: 2,
        cores_per_socket: 36,
        threads_per_core: 2,
        cores_per_l3: None,
        ccx_per_ccd: 1,
        ccd_name: "die",
        // The file has 128 rows of the 144 CPUs (data/c2c/README.md). Checked
        // in the matrix: CPUs 0-35 are socket 0's cores, 36-71 socket 1's
        // (about 115 ns from CPU 0), and the minimum-latency partner of CPU
        // i in 72-127 is i - 72 at 7.6 ns; summary table SMT n=56.
        cpus_measured: 128,
        coverage: "Linux CPUs 0-127 of 0-143: every core (0-35 socket 0, 36-71 socket 1) \
                   and the SMT siblings 72-127 of cores 0-55; siblings 128-143 of cores 56-71 \
                   (socket 1) not measured",
        // Documented: "Max Speed: 3500 MHz" in the same dmidecode output.
        clock_mhz: 3500,
        clock_basis: ClockBasis::DocumentedMaxBoost,
        clock_source:
            "dmidecode \"Max Speed: 3500 MHz\" (gjbex/Code-optimization, machine of [S16])",
        home: Home::Node {
            socket: 0,
            node_in_socket: 0,
        },
        home_evidence: "it does not matter on Intel: same-socket medians 49.8 / 49.9 ns on the \
                        two sockets (summary table)",
        known_misses: &[],
        fitted_classes: Some(&[]),
        role_source: "held out: no preset target cites this matrix; icelake-sp-2s is fitted on the 8375C [S1] (models/src/presets/intel.rs; the 8360Y figures it uses are [S16] MLC DRAM latencies, not this matrix)",
    },
    MeasuredMachine {
        file: "cascadelake-sp-8275cl-2s.csv",
        sku: "2 x Xeon Platinum 8275CL (Cascade Lake-SP, AWS c5.metal)",
        source: "[S1] nviennot/core-to-core-latency @ 96a943a, results/Intel(R) Xeon(R) Platinum \
                 8275CL CPU @ 3.00GHz.csv",
        vendor: Vendor::Intel,
        // calibration.md §0.4: proxy for the 8280 the preset describes.
        preset: "cascadelake-sp-2s",
        // Summary table: SMT n=48, same socket n=276 = 24*23/2, cross
        // n=576 = 24^2: 2 sockets x 24 cores, SMT, 96 CPUs.
        sockets: 2,
        cores_per_socket: 24,
        threads_per_core: 2,
        cores_per_l3: None,
        ccx_per_ccd: 1,
        ccd_name: "die",
        cpus_measured: 96,
        coverage: "CPUs 0-47 are the cores (0-23 socket 0, 24-47 socket 1), 48-95 their SMT \
                   siblings (i + 48)",
        // Assumed: 3.9 GHz single-core turbo, AWS's published figure for
        // c5 (8275CL); base 3.0 GHz per model string [S1].
        clock_mhz: 3900,
        clock_basis: ClockBasis::AssumedMaxBoost,
        clock_source: "AWS c5: 3.9 GHz single-core turbo (not retrieved); base 3.0 GHz per model \
                       string [S1]",
        home: Home::Node {
            socket: 0,
            node_in_socket: 0,
        },
        home_evidence: "it does not matter on Intel: same-socket medians 46.4 / 46.8 ns on the \
                        two sockets (summary table)",
        known_misses: &[],
        fitted_classes: Some(&["smt", "same-l3", "cross-socket"]),
        role_source: "cascadelake-sp-2s targets smt, same-socket, same-socket-non-home and cross-socket all cite [S1] 8275CL (models/src/presets/intel.rs)",
    },
    MeasuredMachine {
        file: "cascadelake-sp-gold6242-2s.csv",
        sku: "2 x Xeon Gold 6242 (Cascade Lake-SP)",
        source: "[S1] nviennot/core-to-core-latency @ 96a943a, results/Dual Intel(R) Xeon Gold \
                 6242 @ 2.8GHz.csv",
        vendor: Vendor::Intel,
        preset: "cascadelake-sp-2s",
        // Summary table: SMT n=32, same socket n=120 = 16*15/2, cross
        // n=256 = 16^2: 2 sockets x 16 cores, SMT, 64 CPUs.
        sockets: 2,
        cores_per_socket: 16,
        threads_per_core: 2,
        cores_per_l3: None,
        ccx_per_ccd: 1,
        ccd_name: "die",
        cpus_measured: 64,
        coverage: "CPUs 0-31 are the cores (0-15 socket 0, 16-31 socket 1), 32-63 their SMT \
                   siblings (i + 32)",
        // Assumed: 3.9 GHz max turbo, Intel's published figure for the Gold
        // 6242; base 2.8 GHz per model string [S1].
        clock_mhz: 3900,
        clock_basis: ClockBasis::AssumedMaxBoost,
        clock_source: "Intel: 3.9 GHz max turbo (not retrieved); base 2.8 GHz per model string \
                       [S1]",
        home: Home::Node {
            socket: 0,
            node_in_socket: 0,
        },
        home_evidence: "it does not matter on Intel: same-socket medians 48.0 / 48.1 ns on the \
                        two sockets (summary table)",
        known_misses: &[],
        fitted_classes: Some(&[]),
        role_source: "held out: cascadelake-sp-2s is fitted on the 8275CL, \"chosen over the 16-core Gold 6242 as the closer Platinum part\" (models/src/presets/intel.rs); no preset target cites this matrix",
    },
    MeasuredMachine {
        file: "epyc-naples-7601-2s.csv",
        sku: "2 x EPYC 7601 (Naples)",
        source: "[S2] KCORES/core-to-core-latency-plus @ 264ea0a, results/Dual AMD EPYC 7601 \
                 32-Core Processor by-jstzwj.csv",
        vendor: Vendor::Amd,
        preset: "epyc-naples-2s",
        // Documented: 32 cores / 64 threads per socket, 4 dies [S28]; 8 NUMA
        // nodes in 2S [S31, S32]; a die is 2 CCX x 4 cores, 8 MB L3 per CCX
        // [S29, S30]. 128 CPUs (data/c2c/README.md: 4 consecutive CPUs a CCX,
        // 8 a die).
        sockets: 2,
        cores_per_socket: 32,
        threads_per_core: 2,
        cores_per_l3: Some(4),
        ccx_per_ccd: 2,
        ccd_name: "die",
        cpus_measured: 128,
        coverage: "CPUs 0-63 are the cores (0-31 socket 0; 4 a CCX, 8 a die and NUMA node), \
                   64-127 their SMT siblings (i + 64)",
        // Documented: 2.2 / 3.2 GHz [S28].
        clock_mhz: 3200,
        clock_basis: ClockBasis::DocumentedMaxBoost,
        clock_source: "3.2 GHz boost [S28] (calibration.md §4)",
        home: Home::Node {
            socket: 1,
            node_in_socket: 3,
        },
        home_evidence: "derived from the matrix: cross-CCX pairs inside die 7 take 128 ns \
                        (calibration.md §4: 131 ns 'when the die is the home') against 216-218 \
                        ns on socket 1's other dies and 288-360 ns on socket 0's; die 7 reaches \
                        socket 1's other dies in 210-212 ns, those dies each other in 255-256 ns",
        known_misses: &[],
        fitted_classes: Some(&[
            "smt",
            "same-l3",
            "cross-ccx-same-ccd",
            "cross-ccd-home-socket",
            "cross-ccd-other-socket",
            "cross-socket",
        ]),
        role_source: "epyc-naples-2s: all ten targets cite [S2] 7601 (models/src/presets/amd.rs)",
    },
    MeasuredMachine {
        file: "epyc-milan-7763-2s.csv",
        sku: "2 x EPYC 7763 (Milan)",
        source: "[S2] KCORES/core-to-core-latency-plus @ 264ea0a, results/Dual AMD EPYC 7763 \
                 64-Core Processor by-fwyzard.csv",
        vendor: Vendor::Amd,
        preset: "epyc-milan-2s",
        // Documented: 64 cores / 128 threads, 8 CCDs x 1 CCX of 8 cores
        // [S10, S43]; 256 CPUs (data/c2c/README.md).
        sockets: 2,
        cores_per_socket: 64,
        threads_per_core: 2,
        cores_per_l3: Some(8),
        ccx_per_ccd: 1,
        ccd_name: "CCD",
        cpus_measured: 256,
        coverage: "CPUs 0-127 are the cores (0-63 socket 0; 8 a CCD), 128-255 their SMT siblings \
                   (i + 128)",
        // Documented: 2.45 / 3.5 GHz [S43].
        clock_mhz: 3500,
        clock_basis: ClockBasis::DocumentedMaxBoost,
        clock_source: "3.5 GHz boost [S43] (calibration.md §6)",
        home: Home::FirstCpu,
        home_evidence: "derived from the matrix: no non-home-socket penalty, cross-CCD medians \
                        119.8 ns on socket 0 and 127.4 ns on socket 1 (CCD-pair medians 106-134 \
                        ns on both)",
        // Two measurements of 2-socket Milan disagree: cross-socket 301.2
        // ns on this 2 x 7763 against 197.1 ns on the 2 x 7R13 (calibration.md
        // §12.1; BIOS and xGMI settings are recorded for neither). One preset
        // cannot be within 10 % of both; epyc-milan-2s follows the 7R13.
        known_misses: &[KnownMiss {
            class: "cross-socket",
            reason:
                "two Milan runs disagree: cross-socket 303.6 ns here, 197.2 ns on the 2 x 7R13 \
                     (calibration.md §12.1; BIOS and xGMI settings not recorded); \
                     epyc-milan-2s follows the 7R13",
        }],
        fitted_classes: Some(&["smt", "same-l3", "cross-ccd-home-socket"]),
        role_source: "epyc-milan-2s targets smt, same-ccx and cross-ccd-home-socket cite [S2] 7763; its cross-socket (301.2 ns) is held out, the targets take the 7R13's 197.1 ns (models/src/presets/amd.rs)",
    },
    MeasuredMachine {
        file: "epyc-milan-7r13-2s.csv",
        sku: "2 x EPYC 7R13 (Milan, AWS c6a.metal)",
        source: "[S1] nviennot/core-to-core-latency @ 96a943a, results/AMD EPYC 7R13 48-Core \
                 Processor.csv",
        vendor: Vendor::Amd,
        preset: "epyc-milan-2s",
        // 48 cores per socket (model string [S1]), SMT, 192 CPUs. Derived
        // from the matrix: 6 groups of 8 cores per socket at ~23 ns (same
        // CCX), so 6 CCDs of one 8-core CCX; summary table same CCX n=168
        // = 6 x 8*7/2.
        sockets: 2,
        cores_per_socket: 48,
        threads_per_core: 2,
        cores_per_l3: Some(8),
        ccx_per_ccd: 1,
        ccd_name: "CCD",
        cpus_measured: 192,
        coverage: "CPUs 0-95 are the cores (0-47 socket 0; 8 a CCD), 96-191 their SMT siblings \
                   (i + 96)",
        // Assumed: 3.6 GHz, AWS's published "up to 3.6 GHz" for c6a;
        // calibration.md §14 lists the 7R13 clock as not found.
        clock_mhz: 3600,
        clock_basis: ClockBasis::AssumedMaxBoost,
        clock_source: "AWS c6a: up to 3.6 GHz (not retrieved; calibration.md §14: n/r)",
        home: Home::Node {
            socket: 0,
            node_in_socket: 0,
        },
        home_evidence: "derived from the matrix: cross-CCD median 107.6 ns on socket 0, 200.5 ns \
                        on socket 1",
        known_misses: &[],
        fitted_classes: Some(&["cross-ccd-other-socket", "cross-socket"]),
        role_source: "epyc-milan-2s targets cross-ccd-non-home-socket and cross-socket cite [S1] 7R13; its SMT, same-CCX and home-socket classes are held out (those targets cite the 7763) (models/src/presets/amd.rs)",
    },
    MeasuredMachine {
        file: "epyc-genoa-9654-2s-smtoff.csv",
        sku: "2 x EPYC 9654 (Genoa), SMT off",
        source: "[S2] KCORES/core-to-core-latency-plus @ 264ea0a, results/Dual AMD EPYC 9654 \
                 96-Core Processor by-leavelet.csv",
        vendor: Vendor::Amd,
        preset: "epyc-genoa-2s:smt-off",
        // Documented: 96 cores, 12 CCDs x 8 cores, one CCX per CCD [S46,
        // S47]; SMT off, 192 CPUs (data/c2c/README.md; summary table).
        sockets: 2,
        cores_per_socket: 96,
        threads_per_core: 1,
        cores_per_l3: Some(8),
        ccx_per_ccd: 1,
        ccd_name: "CCD",
        cpus_measured: 192,
        coverage: "CPUs 0-191 are the cores, SMT off (0-95 socket 0; 8 a CCD)",
        // Documented: 2.40 / 3.70 GHz [S48].
        clock_mhz: 3700,
        clock_basis: ClockBasis::DocumentedMaxBoost,
        clock_source: "3.7 GHz boost [S48] (calibration.md §7)",
        home: Home::FirstCpu,
        home_evidence: "derived from the matrix: no non-home-socket penalty, cross-CCD median \
                        99.3 ns on both sockets (CCD-pair medians 89-103 ns on both)",
        known_misses: &[],
        fitted_classes: Some(&["same-l3", "cross-ccd-home-socket", "cross-socket"]),
        role_source: "epyc-genoa-2s targets same-ccx, cross-ccd-home-socket and cross-socket cite [S2] 9654 (smt and cross-ccd-non-home-socket cite the 9454, not shipped) (models/src/presets/amd.rs)",
    },
    MeasuredMachine {
        file: "epyc-bergamo-9754-1s-smtoff.csv",
        sku: "1 x EPYC 9754 (Bergamo), SMT off",
        source: "[S2] KCORES/core-to-core-latency-plus @ 264ea0a, results/AMD EPYC 9754 128-Core \
                 Processor by-Entropy-Enthalpy.csv",
        vendor: Vendor::Amd,
        preset: "bergamo-1s:smt-off",
        // Documented: 128 cores, 8 CCDs x 2 CCX x 8 cores, 16 MB L3 per CCX
        // [S40, S41, S42] (calibration.md §0.5); the matrix shows 16 groups
        // of 8 cores. SMT off: 128 CPUs.
        sockets: 1,
        cores_per_socket: 128,
        threads_per_core: 1,
        cores_per_l3: Some(8),
        ccx_per_ccd: 2,
        ccd_name: "CCD",
        cpus_measured: 128,
        coverage: "CPUs 0-127 are the cores, SMT off (8 a CCX, 16 a CCD)",
        // Documented: 2.25 / 3.10 GHz [S52]; STH saw a constant 3.1 GHz
        // under load [S53].
        clock_mhz: 3100,
        clock_basis: ClockBasis::DocumentedMaxBoost,
        clock_source: "3.1 GHz boost [S52], observed constant under load [S53] (calibration.md §8)",
        home: Home::Node {
            socket: 0,
            node_in_socket: 0,
        },
        home_evidence: "one socket and one node (NPS1): the matrix shows no home CCD (cross-CCX \
                        medians 98-110 ns on every CCD)",
        known_misses: &[],
        fitted_classes: Some(&["same-l3", "cross-ccx-same-ccd", "cross-ccd-home-socket"]),
        role_source: "bergamo-1s targets same-ccx, cross-ccx-same-ccd and cross-ccd cite [S2] 1 x 9754 (smt cites the 2-socket matrix) (models/src/presets/amd.rs)",
    },
    MeasuredMachine {
        file: "epyc-bergamo-9754-2s.csv",
        sku: "2 x EPYC 9754 (Bergamo)",
        source: "[S2] KCORES/core-to-core-latency-plus @ 264ea0a, results/Dual AMD EPYC 9754 \
                 128-Core Processor by-fwyzard.csv",
        vendor: Vendor::Amd,
        preset: "bergamo-2s",
        // As the 1-socket entry, two sockets, SMT on: 512 CPUs
        // (data/c2c/README.md; summary table SMT n=256).
        sockets: 2,
        cores_per_socket: 128,
        threads_per_core: 2,
        cores_per_l3: Some(8),
        ccx_per_ccd: 2,
        ccd_name: "CCD",
        cpus_measured: 512,
        coverage: "CPUs 0-255 are the cores (0-127 socket 0; 8 a CCX, 16 a CCD), 256-511 their \
                   SMT siblings (i + 256)",
        clock_mhz: 3100,
        clock_basis: ClockBasis::DocumentedMaxBoost,
        clock_source: "3.1 GHz boost [S52], observed constant under load [S53] (calibration.md §8)",
        home: Home::Node {
            socket: 1,
            node_in_socket: 0,
        },
        home_evidence: "derived from the matrix: cross-CCD median 205.8 ns on socket 0, 109.9 ns \
                        on socket 1; cross-CCX inside a CCD 199-205 ns on socket 0, 98-110 ns on \
                        socket 1",
        known_misses: &[],
        fitted_classes: Some(&[
            "smt",
            "same-l3",
            "cross-ccx-same-ccd",
            "cross-ccd-home-socket",
            "cross-ccd-other-socket",
            "cross-socket",
        ]),
        role_source: "bergamo-2s: all six targets cite [S2] 2 x 9754 (models/src/presets/amd.rs)",
    },
];

/// The preset names (without modes) that some matrix stands for, in order.
pub fn preset_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for m in MEASURED {
        if !names.contains(&m.preset_name()) {
            names.push(m.preset_name());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::cpu::LinuxCpu;
    use sim_core::topology::Topology;

    #[test]
    fn every_entry_is_consistent() {
        for m in MEASURED {
            assert!(m.cpus_measured <= m.cpus_total(), "{}", m.file);
            assert!(m.file.ends_with(".csv"));
            if let Some(per_l3) = m.cores_per_l3 {
                assert!(
                    divides(per_l3 * m.ccx_per_ccd, m.cores_per_socket),
                    "{}",
                    m.file
                );
            }
            assert_eq!(
                m.vendor == Vendor::Intel,
                m.cores_per_l3.is_none(),
                "{}",
                m.file
            );
            assert_eq!(
                m.threads_per_core == 1,
                m.preset.ends_with(":smt-off"),
                "{}",
                m.file
            );
        }
        assert_eq!(
            preset_names(),
            [
                "icelake-sp-2s",
                "cascadelake-sp-2s",
                "epyc-naples-2s",
                "epyc-milan-2s",
                "epyc-genoa-2s",
                "bergamo-1s",
                "bergamo-2s"
            ]
        );
    }

    /// A preset target's class as `bounce validate` names the class its
    /// pair falls in on the measured machine.
    fn validate_key(target_class: &str) -> &str {
        match target_class {
            "same-ccx" | "same-socket" | "same-socket-non-home" | "same-die" => "same-l3",
            "cross-ccx-home-die"
            | "cross-ccx-other-die-home-socket"
            | "cross-ccx-non-home-socket" => "cross-ccx-same-ccd",
            "cross-ccd" | "home-die-to-other-die" | "two-non-home-dies-home-socket" => {
                "cross-ccd-home-socket"
            }
            "cross-ccd-non-home-socket" | "cross-die-non-home-socket" => "cross-ccd-other-socket",
            "cross-socket-home-die" | "cross-socket-other-dies" => "cross-socket",
            other => other,
        }
    }

    #[test]
    fn each_role_is_what_the_presets_targets_cite() {
        use crate::presets::{self, sources};
        // The source string each shipped matrix is cited by in the targets.
        let cited_as = |file: &str| -> Option<&str> {
            Some(match file {
                "icelake-sp-8375c-2s.csv" => sources::S1_8375C,
                "cascadelake-sp-8275cl-2s.csv" => sources::S1_8275CL,
                "epyc-naples-7601-2s.csv" => sources::S2_7601,
                "epyc-milan-7763-2s.csv" => sources::S2_7763,
                "epyc-milan-7r13-2s.csv" => sources::S1_7R13,
                "epyc-genoa-9654-2s-smtoff.csv" => sources::S2_9654,
                "epyc-bergamo-9754-1s-smtoff.csv" => sources::S2_9754_1S,
                "epyc-bergamo-9754-2s.csv" => sources::S2_9754_2S,
                _ => return None,
            })
        };
        for m in MEASURED {
            let preset = presets::find(m.preset_name()).unwrap();
            let mut expected: Vec<&str> = preset
                .targets
                .iter()
                .filter(|t| Some(t.source) == cited_as(m.file))
                .map(|t| validate_key(t.class))
                .collect();
            expected.sort_unstable();
            expected.dedup();
            let mut recorded = m.fitted_classes.unwrap().to_vec();
            recorded.sort_unstable();
            assert_eq!(recorded, expected, "{}", m.file);
            assert!(m.role_source.contains(m.preset_name()), "{}", m.file);
        }
        let held_out: Vec<&str> = MEASURED
            .iter()
            .filter(|m| m.fitted_classes == Some(&[]))
            .map(|m| m.file)
            .collect();
        assert_eq!(
            held_out,
            ["icelake-sp-8360y-2s.csv", "cascadelake-sp-gold6242-2s.csv"]
        );
        let milan = MEASURED
            .iter()
            .find(|m| m.file == "epyc-milan-7763-2s.csv")
            .unwrap();
        assert_eq!(milan.role("smt"), Role::Calibration);
        assert_eq!(milan.role("cross-socket"), Role::Prediction);
    }

    #[test]
    fn the_8360y_adjusts_icelake_to_36_cores_at_its_clock() {
        let preset = crate::presets::resolve("icelake-sp-2s").unwrap();
        let m = MEASURED
            .iter()
            .find(|m| m.file == "icelake-sp-8360y-2s.csv")
            .unwrap();
        let a = adjust(&preset, m).unwrap();
        let t = Topology::new(a.spec.clone()).unwrap();
        assert_eq!(t.cpu_count(), 144);
        assert_eq!(t.cores_per_socket(), 36);
        assert_eq!(t.socket_of(LinuxCpu::new(36)), 1);
        assert_eq!(t.core_of(LinuxCpu::new(72)), 0);
        assert_eq!(
            a.changes,
            vec![
                Change {
                    key: "cores per L3 domain",
                    from: 40,
                    to: 36
                },
                Change {
                    key: "clock MHz",
                    from: 3400,
                    to: 3500
                }
            ]
        );
        // Latencies are untouched: cycles at the new clock.
        assert_eq!(a.spec.latency, preset.latency);
    }

    #[test]
    fn a_home_is_a_node_of_the_machine() {
        let mut spec = crate::presets::resolve("icelake-sp-2s").unwrap();
        spec.nodes_per_socket = 4;
        let home = Home::Node {
            socket: 1,
            node_in_socket: 3,
        };
        assert_eq!(home.on(&spec), Ok(LineHome::Node(7)));
        assert_eq!(Home::FirstCpu.on(&spec), Ok(LineHome::FirstCpu));
        spec.nodes_per_socket = 1;
        assert_eq!(
            home.on(&spec).unwrap_err(),
            "the line's home, node 3 of socket 1, does not exist on a machine of 2 socket(s) x 1 node(s)"
        );
    }

    #[test]
    fn a_preset_with_smt_cannot_stand_for_an_smt_off_run() {
        let preset = crate::presets::resolve("icelake-sp-2s").unwrap();
        let mut m = MEASURED[0].clone();
        m.threads_per_core = 1;
        let e = adjust(&preset, &m).unwrap_err();
        assert_eq!(
            e,
            "preset `icelake-sp-2s` has 2 thread(s) per core, the measured machine 1 (SMT off)"
        );
    }

    #[test]
    fn amd_ccx_size_is_kept_and_the_ccx_count_follows_the_cores() {
        let mut preset = crate::presets::resolve("icelake-sp-2s").unwrap();
        // An AMD-shaped stand-in: 8 CCXs of 8 cores per socket.
        preset.l3_per_node = 8;
        preset.cores_per_l3 = 8;
        let m = MEASURED
            .iter()
            .find(|m| m.file == "epyc-milan-7r13-2s.csv")
            .unwrap();
        let a = adjust(&preset, m).unwrap();
        assert_eq!((a.spec.l3_per_node, a.spec.cores_per_l3), (6, 8));
        assert_eq!(a.changes[0].to_string(), "L3 domains per node 8 -> 6");
    }
}
