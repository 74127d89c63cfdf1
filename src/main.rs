//! `bounce`: the command line. It parses arguments, calls the library
//! crates, and prints; it holds no simulation logic.
//!
//! Exit codes: 0 success, 1 a run failed (a bound hit, a script assertion,
//! a protocol violation), 2 invalid input or usage.

use bounce::charts;
mod progress;

use clap::{Parser, Subcommand};
use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::report::trace::TraceProbe;
use scenarios::{load_file_in, ImportScope, InputError, LoadedScenario};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Writes to standard output; when the reader has gone (`bounce ... | head`)
/// the program ends quietly instead of panicking.
fn emit(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// `--force`: files named by `--svg`, `--write-variant`, `--write-scenario`
/// and `--csv` may be overwritten. Set once, from the command line.
static FORCE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Refuses, before any work, to write over an existing file without
/// `--force`.
fn refuse_existing(path: &Path) -> Result<(), ExitCode> {
    if !FORCE.load(std::sync::atomic::Ordering::Relaxed) && path.exists() {
        eprintln!(
            "error: `{}` exists; pass --force to overwrite it, or name another file",
            path.display()
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    Ok(())
}

/// Writes `path` whole or not at all: a temporary file beside it, moved
/// into place (without `--force`, only if nothing is there: linked, not
/// renamed, so a file that appeared meanwhile is not overwritten). On
/// failure, says so and gives the exit code for bad output paths.
fn write_whole(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), ExitCode> {
    refuse_existing(path)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let force = FORCE.load(std::sync::atomic::Ordering::Relaxed);
    std::fs::write(&tmp, contents)
        .and_then(|_| {
            if force {
                std::fs::rename(&tmp, path)
            } else {
                std::fs::hard_link(&tmp, path).and_then(|_| std::fs::remove_file(&tmp))
            }
        })
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            eprintln!("error: cannot write `{}`: {e}", path.display());
            ExitCode::from(EXIT_BAD_INPUT)
        })
}

// `print!` and `println!` through `emit`, for every use below.
macro_rules! print {
    ($($arg:tt)*) => {
        emit(format_args!($($arg)*))
    };
}
macro_rules! println {
    () => {
        emit(format_args!("\n"))
    };
    ($($arg:tt)*) => {{
        emit(format_args!($($arg)*));
        emit(format_args!("\n"));
    }};
}

/// The `--help` heading of the options every subcommand takes.
const GLOBAL_OPTIONS: &str = "Global options";

#[derive(Parser)]
#[command(
    name = "bounce",
    version,
    about = "Deterministic cache-coherence simulator: what a struct layout or a lock costs, and why",
    after_help = "Example: bounce run scenarios/shipped/false-sharing.toml"
)]
struct Cli {
    /// Host threads for running variants, sweep cases and `optimize`'s
    /// layouts in parallel, 1 to 256 (results do not depend on it; runs in
    /// parallel share the memory limit). Default:
    /// the number of logical CPUs of the host, or `RAYON_NUM_THREADS` when set.
    #[arg(long, global = true, value_name = "N", help_heading = GLOBAL_OPTIONS)]
    jobs: Option<usize>,
    /// Raise (or lower) one of the bounds on input size and run length, such
    /// as `--set-limit iterations=2000000000000`; repeatable. `bounce limits`
    /// lists them.
    #[arg(long, global = true, value_name = "NAME=VALUE", help_heading = GLOBAL_OPTIONS)]
    set_limit: Vec<String>,
    /// Let the scenario's imports (pahole listings, BTF files, machine
    /// files) name files outside its own directory tree (absolute paths,
    /// `..`, symbolic links out of it).
    /// Off by default: a shared scenario is data, not a key to your files.
    #[arg(long, global = true, help_heading = GLOBAL_OPTIONS)]
    allow_imports_outside: bool,
    /// Overwrite the files named by --svg, --write-variant, --write-scenario
    /// and --csv (without it, an existing file is an error).
    #[arg(long, global = true, help_heading = GLOBAL_OPTIONS)]
    force: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every variant of a scenario and print the comparison and attribution.
    Run {
        /// The scenario file (TOML).
        file: PathBuf,
        /// Check the protocol invariants after every transaction (slower; always on in debug builds).
        #[arg(long)]
        check: bool,
        /// Also print, per variant, the host time and the simulated memory
        /// operations and events per host second (variants run one at a time),
        /// then the peak resident memory of the process.
        #[arg(long)]
        host_stats: bool,
        /// Also write results.csv, results.json and fields.csv into DIR,
        /// and the charts into DIR/charts/ (created if missing; written only
        /// when every run succeeds).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Run only the cases whose index is I modulo N (0 <= I < N) and write
        /// them, with a manifest, to --out; `bounce merge` joins the shards.
        #[arg(long, value_name = "I/N", value_parser = parse_shard, requires = "out")]
        shard: Option<(usize, usize)>,
        /// Run only the cases --out DIR does not hold yet: those an earlier
        /// run into DIR finished before it stopped (or failed), and those of
        /// a results.json of the same scenario there. The results are the
        /// same bytes as a run never stopped.
        #[arg(long, requires = "out")]
        resume: bool,
        /// For a sweep: also draw each case's own charts (attribution, c2c,
        /// line maps) into DIR/charts/cases/CASE/; without it, the charts
        /// are the sweep's summary (scaling or sweep charts, comparison,
        /// measured) and a scenario without a sweep draws all of its own.
        #[arg(long, requires = "out")]
        case_charts: bool,
        /// Print no progress (by default: a progress bar on a terminal,
        /// otherwise a line every few seconds, always on stderr).
        #[arg(long, short)]
        quiet: bool,
        /// What to print on stdout: the report (text), or the records as
        /// results.csv or results.json hold them (csv, json).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// For a sweep: the metric of the table with a row per case and a
        /// column per variant, named as its results.csv column or as the
        /// report's `metric` column names it (`throughput.total`) (default:
        /// what the report compares: measured_threads_cycles_per_iteration_mean
        /// when the [[measured]] rows name a thread group that every run
        /// has, else throughput_iterations_per_second).
        #[arg(long, value_name = "COLUMN")]
        metric: Option<String>,
        /// For a sweep: print only that table, not each case's comparison.
        #[arg(long)]
        compact: bool,
    },
    /// Join the outputs of `bounce run --shard I/N --out DIR` into the files
    /// an unsharded run writes.
    Merge {
        /// Where to write results.csv, results.json and fields.csv.
        out: PathBuf,
        /// The shards' output directories, one per shard.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Also draw each case's own charts into OUT/charts/cases/CASE/, as
        /// `run --case-charts` does.
        #[arg(long)]
        case_charts: bool,
    },
    /// List the bounds on input size and run length: each value, and why.
    Limits,
    /// Validate a scenario without running it.
    Check {
        /// The scenario file (TOML).
        file: PathBuf,
        /// What to print: text, or a row per case and variant (with the
        /// case's cost estimate) as CSV or JSON.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// List the machine presets, or show one with every parameter and its source.
    Presets {
        #[command(subcommand)]
        action: Option<PresetsAction>,
        /// What to print: text, or the list (a row per preset) or the
        /// parameters (a row per parameter) as CSV or JSON.
        #[arg(long, value_enum, default_value_t = Format::Text, global = true)]
        format: Format,
    },
    /// Compare the presets with measured core-to-core latency matrices.
    Validate {
        /// Only the measured machines this preset stands for; with
        /// --matrix, the machine file the matrix was measured on.
        #[arg(long, value_name = "PRESET|FILE")]
        machine: Option<String>,
        /// A directory of measured matrices (default: the copies shipped in data/c2c).
        #[arg(long, value_name = "DIR")]
        data: Option<PathBuf>,
        /// Also write the table as CSV to this file.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
        /// Also write validation.csv and the charts (validation-scatter.svg,
        /// validation-classes.svg) into DIR (created if missing).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// What to print: the table (text), or its rows as validation.csv
        /// holds them (csv) or as JSON objects with the same keys (json).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Fail (exit 1) on documented known misses too; without it only a
        /// class outside its bound that the calibration does not expect fails.
        #[arg(long)]
        strict: bool,
        /// Print no progress (by default: a progress bar counting the
        /// measured machines on a terminal, otherwise a line every few
        /// seconds, always on stderr).
        #[arg(long, short)]
        quiet: bool,
        /// Your own measured matrix (CSV in the format of data/c2c/README.md),
        /// against the machine file given as --machine FILE (a [machine]
        /// table, as `bounce presets show NAME --toml` prints it).
        #[arg(long, value_name = "CSV", conflicts_with = "data")]
        matrix: Option<PathBuf>,
        /// With --matrix: the NUMA node the measured line was homed on, as
        /// Linux numbers them (`numactl --hardware`), or `first-cpu` (the
        /// node of each pair's first CPU); default: node 0, assumed.
        #[arg(long, value_name = "N|first-cpu", requires = "matrix")]
        home_node: Option<String>,
        /// With --matrix: a class known to miss its bound, with why
        /// (`cross-socket=the UPI link ran at a lower speed`); repeat it for
        /// several. Such a miss fails only with --strict. A class is its key
        /// (smt, same-l3, cross-l3-same-socket on Intel,
        /// cross-ccd-home-socket and cross-ccd-other-socket on AMD,
        /// cross-socket) or its name as the table prints it.
        #[arg(long, value_name = "CLASS[=WHY]", requires = "matrix")]
        known_miss: Vec<String>,
        /// With --matrix: a class whose measured median the machine file
        /// was fitted on (its row then checks the fit; the others are
        /// predictions); repeat it for several, or `none` if the file was
        /// set without this matrix. Without it each class's role is unknown.
        /// Classes are named as for --known-miss.
        #[arg(long, value_name = "CLASS|none", requires = "matrix")]
        fitted: Vec<String>,
        /// With --matrix: how the matrix numbers a core's SMT siblings:
        /// `apart` (CPU i's sibling is i + the core count, as Linux numbers
        /// most machines, the servers of data/c2c among them) or `adjacent`
        /// (CPUs 2k and 2k+1 are one core, as Windows and some firmware
        /// number them).
        #[arg(long, value_enum, value_name = "apart|adjacent", default_value_t = SiblingNumbering::Apart, requires = "matrix")]
        sibling_numbering: SiblingNumbering,
        /// With --matrix: where each of the matrix's CPUs is, as
        /// `lscpu -p=CPU,CORE,SOCKET` (or `lscpu -p`) printed it on the
        /// measured machine: any CPU numbering is put in the machine file's
        /// (the first thread of every core, socket by socket, then the
        /// second). Instead of --sibling-numbering.
        #[arg(
            long,
            value_name = "FILE",
            requires = "matrix",
            conflicts_with = "sibling_numbering"
        )]
        cpu_map: Option<PathBuf>,
    },
    /// Print a step trace of one variant: every access, its state changes and its cost.
    Trace {
        /// The scenario file (TOML).
        file: PathBuf,
        /// The variant to trace (default: the base).
        #[arg(long, value_name = "NAME")]
        variant: Option<String>,
        /// Stop printing after this many entries.
        #[arg(long, default_value_t = 200, value_name = "N")]
        limit: usize,
        /// Also draw the first coherence transactions (misses; hits send no
        /// message) as a sequence diagram of messages between caches and
        /// directories into this SVG file.
        #[arg(long, value_name = "OUT.svg")]
        svg: Option<PathBuf>,
        /// How many transactions the SVG draws (1 to 200).
        #[arg(long, default_value_t = 12, value_name = "N", requires = "svg",
              value_parser = clap::value_parser!(u32).range(1..=200))]
        svg_steps: u32,
        /// Leave the adjacent-line prefetcher's reads out of the SVG (each
        /// demand miss brings one on machines with it on); the text trace
        /// keeps them.
        #[arg(long, requires = "svg")]
        svg_no_prefetch: bool,
        /// With --svg, print no progress (by default: a spinner with the
        /// elapsed time on a terminal, otherwise a line every few seconds).
        #[arg(long, short)]
        quiet: bool,
        /// For a sweep: trace this case (its id as `bounce check` prints it,
        /// e.g. `cpus=8`, or its index); without it, the scenario as written.
        #[arg(long, value_name = "ID")]
        case: Option<String>,
    },
    /// Search one struct's field order, cache-line alignments and padding for
    /// the layout with the fewest cycles per iteration over the scenario's sweep.
    Optimize {
        /// The scenario file (TOML).
        file: PathBuf,
        /// The struct to lay out (a key of [structs]).
        #[arg(long = "struct", value_name = "S")]
        struct_name: String,
        /// Largest acceptable sizeof, in bytes.
        #[arg(long, value_name = "N")]
        budget_bytes: Option<u32>,
        /// The struct's first fields, in order, which must not move (an ABI prefix).
        #[arg(long, value_name = "a,b,c", value_delimiter = ',')]
        fixed: Vec<String>,
        /// How many of the best layouts to print.
        #[arg(long, default_value_t = 5, value_name = "K")]
        top: usize,
        /// Most distinct layouts to simulate.
        #[arg(long, default_value_t = 400, value_name = "N")]
        max_evaluations: usize,
        /// Write the best layout as a [[variants]] entry (set patches) to this file.
        #[arg(long, value_name = "PATH")]
        write_variant: Option<PathBuf>,
        /// Start from this variant instead of the base.
        #[arg(long, value_name = "NAME")]
        variant: Option<String>,
        /// Print no progress (by default: a spinner counting the simulations
        /// on a terminal, otherwise a line every few seconds, on stderr).
        #[arg(long, short)]
        quiet: bool,
        /// For a sweep: optimize for this case alone (its id, e.g. `cpus=8`,
        /// or its index); without it, over every case.
        #[arg(long, value_name = "ID")]
        case: Option<String>,
    },
    /// Print a struct's layout as pahole does (offsets, sizes, holes,
    /// cache-line boundaries, padding); with --run, each member's loads,
    /// stores, atomics and HITM transfers over a run of the variant.
    Layout {
        /// The scenario file (TOML).
        file: PathBuf,
        /// The struct to show (default: every struct of an instance that code the variant runs names, as the report keeps them).
        #[arg(long = "struct", value_name = "NAME")]
        struct_name: Option<String>,
        /// The variant whose layout to show (default: the base).
        #[arg(long, value_name = "NAME")]
        variant: Option<String>,
        /// Run the variant and show each member's traffic.
        #[arg(long)]
        run: bool,
        /// For a sweep: this case (its id, e.g. `cpus=8`, or its index);
        /// without it, the scenario as written.
        #[arg(long, value_name = "ID")]
        case: Option<String>,
    },
    /// Print a struct as a scenario's `[structs.NAME]` table, read from where
    /// the kernel describes it.
    Import {
        #[command(subcommand)]
        source: ImportSource,
    },
    /// Explore every reachable state of the coherence protocol on a small
    /// configuration and check its invariants in each.
    CheckProtocol {
        /// The protocol (default: all three, one after the other).
        #[arg(long, value_parser = ["mesi", "mesif", "moesi"])]
        protocol: Option<String>,
        /// Private caches (one CPU each).
        #[arg(long, default_value_t = 3, value_name = "N")]
        caches: u32,
        /// Cache lines.
        #[arg(long, default_value_t = 2, value_name = "L")]
        lines: u32,
        /// Distinct values a store or atomic may write.
        #[arg(long, default_value_t = 2, value_name = "V")]
        values: u32,
        /// Store-buffer entries per CPU (1 by default: with the shared L3 the
        /// states triple, and MOESI at 2 needs more than 2 GiB).
        #[arg(long, default_value_t = 1, value_name = "N")]
        buffer: u32,
        /// Caches per L3 domain (caches 0 and 1 share the first with the
        /// default 2; with 1 every transfer goes through the directory).
        #[arg(long, default_value_t = 2, value_name = "N")]
        cores_per_l3: u32,
        /// Whether an L3 keeps the clean lines its cores read and answers
        /// reads of them (default: inclusive for MESI and MESIF,
        /// victim-with-sharing for MOESI).
        #[arg(long, value_name = "KIND",
              value_parser = ["not-kept", "inclusive", "victim-with-sharing"])]
        l3_shared_lines: Option<String>,
        /// How the directory tracks a shared line's sharers.
        #[arg(long, default_value = "broadcast-shared", value_name = "KIND",
              value_parser = ["exact", "broadcast-shared"])]
        directory: String,
        /// Stop, without a verdict, after this many distinct states.
        #[arg(long, default_value_t = sim_core::checker::DEFAULT_MAX_STATES, value_name = "N")]
        max_states: u64,
        /// Also let each cache issue adjacent-line prefetch reads, on any
        /// line, at any time (the state space grows about a hundredfold:
        /// try `--caches 2` first).
        #[arg(long)]
        prefetch: bool,
        /// Leave out the evictions: by default each cache may also evict
        /// any line it holds, at any time (a dirty copy written back, as
        /// the private caches' capacity and deep idle make it), which adds
        /// about a tenth to the states and the time.
        #[arg(long)]
        no_evictions: bool,
        /// Also let each cache request lines for ownership with no store
        /// attached (an RFO prefetch), at any time: the lines of its
        /// buffered stores not yet draining (the store buffer's, with
        /// `store_rfo_ahead_entries`), or any line (also the run ahead's,
        /// for a waiting locked instruction). Either grows the default
        /// system past the memory limit: try `--caches 2` or `--lines 1`.
        #[arg(long, default_value = "off", value_name = "KIND",
              value_parser = ["off", "buffered-stores", "any-line"])]
        ownership_prefetch: String,
        /// On a violation, write a scenario that replays its path to this file.
        #[arg(long, value_name = "FILE")]
        write_scenario: Option<PathBuf>,
    },
    /// Print a shell completion script for bounce.
    ///
    /// For example `bounce completions bash >
    /// ~/.local/share/bash-completion/completions/bounce`, or for zsh a file
    /// `_bounce` in a directory of `$fpath`.
    Completions {
        /// The shell the script is for.
        shell: clap_complete::Shell,
    },
    /// Print bounce's manual page (roff).
    ///
    /// For example `bounce man > bounce.1; man ./bounce.1`; with --dir, write
    /// bounce.1 and a page per subcommand (bounce-run.1, ...) there.
    Man {
        /// Write the pages into this directory (created if missing) instead of printing bounce.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ImportSource {
    /// From BTF: the running kernel's (/sys/kernel/btf/vmlinux), a raw BTF
    /// file, or an ELF `vmlinux` with a `.BTF` section. Nested structs and
    /// unions are written out, bitfields keep their bits, alignment is
    /// inferred from the offsets; every member lands where BTF puts it.
    Btf {
        /// The struct (or union) to import.
        #[arg(long = "struct", value_name = "NAME")]
        struct_name: String,
        /// The BTF.
        #[arg(long, value_name = "PATH", default_value = "/sys/kernel/btf/vmlinux")]
        file: PathBuf,
        /// Write the table to this file instead of printing it.
        #[arg(long, value_name = "FILE")]
        write: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum PresetsAction {
    /// Show one preset: topology, and every parameter with its source.
    Show {
        /// A preset (`NAME` or `NAME:MODE,...`), or a machine file
        /// (`FILE.toml`, a `[machine]` table): its topology, every key's
        /// value and where it comes from (the file, its preset, or the
        /// default), its latency legs in cycles and nanoseconds, and the
        /// model's one-way ping-pong latency per pair relation.
        name: String,
        /// Print it as an inline `[machine]` table to save and edit.
        #[arg(long)]
        toml: bool,
    },
}

/// What a command prints on stdout: text for people, or the machine-readable
/// form of the same results, in the schema of the files `--out` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Csv,
    Json,
}

/// `validate --sibling-numbering`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SiblingNumbering {
    Apart,
    Adjacent,
}

const EXIT_RUN_FAILED: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

/// Creates the directory `dir` that option `option` names (and its
/// parents), or says why not: a path that is a file is named as such
/// rather than as the system's bare "File exists".
fn create_dir(dir: &Path, option: &str) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "error: `{}` is a file, and {option} takes a directory (created if missing)",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "error: cannot create `{}`, the {option} directory: {e}",
            dir.display()
        )
    })
}

/// `Cli::try_parse`, without freeing the command tree and the matches
/// it builds: every subcommand's arguments, held until the process ends
/// anyway (a short run's start spent about 60,000 instructions freeing
/// them, a sixth of the parse). An error is formatted as `try_parse`
/// formats it.
fn parse_command_line() -> Result<Cli, clap::Error> {
    let mut command = std::mem::ManuallyDrop::new(<Cli as clap::CommandFactory>::command());
    let mut matches =
        std::mem::ManuallyDrop::new(command.try_get_matches_from_mut(std::env::args_os())?);
    <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches)
        .map_err(|e| e.format(&mut <Cli as clap::CommandFactory>::command()))
}

fn main() -> ExitCode {
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_BAD_INPUT } else { 0 });
        }
    };
    match global_options(&cli) {
        Ok(inputs) => dispatch(cli.command, &inputs),
        Err(code) => code,
    }
}

/// Applies the options every subcommand takes (`--jobs`, `--force`) and
/// reads the ones that go with the inputs (`--set-limit`,
/// `--allow-imports-outside`); an error has been printed.
fn global_options(cli: &Cli) -> Result<Inputs, ExitCode> {
    if let Some(jobs) = cli.jobs {
        if jobs == 0 || jobs > scenarios::run::budget::MAX_JOBS {
            eprintln!(
                "error: --jobs must be from 1 to {} (runs are independent, one thread each; \
                 more threads than cores only add memory), found {jobs}",
                scenarios::run::budget::MAX_JOBS
            );
            return Err(ExitCode::from(EXIT_BAD_INPUT));
        }
        // Only the size of the pool changes; results are collected in input order.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build_global();
    }
    FORCE.store(cli.force, std::sync::atomic::Ordering::Relaxed);
    let mut limits = scenarios::Limits::default();
    for assignment in &cli.set_limit {
        if let Err(e) = limits.set(assignment) {
            eprintln!("error: --set-limit {assignment}: {e}");
            return Err(ExitCode::from(EXIT_BAD_INPUT));
        }
    }
    Ok(Inputs {
        limits,
        imports: if cli.allow_imports_outside {
            ImportScope::Anywhere
        } else {
            ImportScope::ScenarioDirectory
        },
    })
}

/// Runs the subcommand. Deliberately one function: an arm per
/// subcommand that only hands its arguments to the function doing it, so
/// the whole command line reads in one place.
fn dispatch(command: Command, inputs: &Inputs) -> ExitCode {
    match command {
        Command::Run {
            file,
            check,
            host_stats,
            out,
            shard,
            resume,
            case_charts,
            quiet,
            format,
            metric,
            compact,
        } => run(
            &file,
            inputs,
            check,
            host_stats,
            RunOut {
                dir: out.as_deref(),
                shard,
                resume,
                charts: charts::ChartOptions {
                    per_case: case_charts,
                },
            },
            quiet,
            RunPrint {
                format,
                metric: metric.as_deref(),
                compact,
            },
        ),
        Command::Limits => show_limits(&inputs.limits),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "bounce", &mut script);
            emit(format_args!("{}", String::from_utf8_lossy(&script)));
            ExitCode::SUCCESS
        }
        Command::Man { dir } => man_pages(dir.as_deref()),
        Command::Import {
            source:
                ImportSource::Btf {
                    struct_name,
                    file,
                    write,
                },
        } => import_btf(&file, &struct_name, write.as_deref()),
        Command::Merge {
            out,
            shards,
            case_charts,
        } => merge(
            &out,
            &shards,
            &inputs.limits,
            charts::ChartOptions {
                per_case: case_charts,
            },
        ),
        Command::Check { file, format } => check(&file, inputs, format),
        Command::Presets { action, format } => presets(action, format, &inputs.limits),
        Command::Validate {
            machine,
            data,
            csv,
            out,
            format,
            strict,
            quiet,
            matrix,
            home_node,
            known_miss,
            fitted,
            sibling_numbering,
            cpu_map,
        } => validate(
            ValidateInputs {
                machine,
                data,
                matrix,
                home_node,
                known_misses: known_miss,
                fitted,
                sibling_numbering,
                cpu_map,
            },
            csv,
            out.as_deref(),
            format,
            strict,
            quiet,
            &inputs.limits,
        ),
        Command::Trace {
            file,
            variant,
            limit,
            svg,
            svg_steps,
            svg_no_prefetch,
            quiet,
            case,
        } => trace(
            &file,
            inputs,
            variant.as_deref(),
            limit,
            svg.as_deref()
                .map(|p| (p, svg_steps as usize, !svg_no_prefetch)),
            quiet,
            case.as_deref(),
        ),
        Command::Layout {
            file,
            struct_name,
            variant,
            run,
            case,
        } => layout(
            &file,
            inputs,
            struct_name.as_deref(),
            variant.as_deref(),
            run,
            case.as_deref(),
        ),
        Command::Optimize {
            file,
            struct_name,
            budget_bytes,
            fixed,
            top,
            max_evaluations,
            write_variant,
            variant,
            quiet,
            case,
        } => optimize(
            &file,
            inputs,
            scenarios::tools::optimize::OptimizeOptions {
                struct_name,
                budget_bytes,
                fixed,
                top,
                max_evaluations,
                variant,
            },
            write_variant.as_deref(),
            quiet,
            case.as_deref(),
        ),
        Command::CheckProtocol {
            protocol,
            caches,
            lines,
            values,
            buffer,
            cores_per_l3,
            l3_shared_lines,
            directory,
            max_states,
            prefetch,
            no_evictions,
            ownership_prefetch,
            write_scenario,
        } => check_protocol(
            protocol.as_deref(),
            [caches, lines, values, buffer],
            CheckMachine {
                cores_per_l3,
                l3_shared_lines,
                directory,
                evictions: !no_evictions,
                ownership_prefetch: match ownership_prefetch.as_str() {
                    "buffered-stores" => sim_core::checker::OwnershipPrefetch::BufferedStores,
                    "any-line" => sim_core::checker::OwnershipPrefetch::AnyLine,
                    _ => sim_core::checker::OwnershipPrefetch::Off,
                },
            },
            max_states,
            inputs.limits.host_memory_bytes,
            prefetch,
            write_scenario.as_deref(),
        ),
    }
}

/// Whether reports to standard error get colours: only on a terminal, and
/// never when `NO_COLOR` is set to anything but the empty string
/// (<https://no-color.org>).
fn stderr_in_colour() -> bool {
    use std::io::IsTerminal;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && std::io::stderr().is_terminal()
}

/// What every command that loads a scenario needs besides its path: the
/// bounds, and where its imports may be read from.
struct Inputs {
    limits: scenarios::Limits,
    imports: ImportScope,
}

impl Inputs {
    // `InputError` is the scenarios crate's error type, returned by value.
    #[allow(clippy::result_large_err)]
    fn load(&self, file: &Path) -> Result<LoadedScenario, InputError> {
        let loaded = load_file_in(file, &self.limits, self.imports)?;
        // Said when it is read, whatever the command: the legs' time
        // moved with the clock (the run's report says it again).
        if let Some(note) = scenarios::machine_clock_note(&loaded) {
            eprintln!("warning: {note}");
        }
        Ok(loaded)
    }
}

/// `bounce man`: the manual page of bounce on stdout, or with `dir` the
/// pages of bounce and of each subcommand written there.
fn man_pages(dir: Option<&Path>) -> ExitCode {
    let command = <Cli as clap::CommandFactory>::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        if let Err(e) = clap_mangen::Man::new(command).render(&mut page) {
            eprintln!("error: cannot render the manual page: {e}");
            return ExitCode::from(EXIT_RUN_FAILED);
        }
        emit(format_args!("{}", String::from_utf8_lossy(&page)));
        return ExitCode::SUCCESS;
    };
    if let Err(e) = create_dir(dir, "--dir") {
        eprintln!("{e}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    // Pages name subcommands `bounce-run` etc., as git's do.
    if let Err(e) = clap_mangen::generate_to(command, dir) {
        eprintln!(
            "error: cannot write the manual pages to `{}`: {e}",
            dir.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    ExitCode::SUCCESS
}

fn input_error(e: &InputError) -> ExitCode {
    eprintln!("{}", e.render(stderr_in_colour()));
    ExitCode::from(EXIT_BAD_INPUT)
}

fn load_and_build(
    file: &Path,
    inputs: &Inputs,
    options: BuildOptions,
) -> Result<(LoadedScenario, Vec<BuiltVariant>), ExitCode> {
    let loaded = inputs.load(file).map_err(|e| input_error(&e))?;
    let built = build_all(&loaded, options).map_err(|e| input_error(&e))?;
    Ok((loaded, built))
}

/// `I/N` with `0 <= I < N`.
fn parse_shard(text: &str) -> Result<(usize, usize), String> {
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| "expected I/N, such as 0/4 (shards are numbered 0 to N-1)".to_string())?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("`{i}` is not a shard number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("`{n}` is not a number of shards"))?;
    if n == 0 {
        return Err("the number of shards must be at least 1".into());
    }
    if i >= n {
        return Err(format!(
            "shard {i} of {n} does not exist: shards are numbered 0 to {}",
            n - 1
        ));
    }
    Ok((i, n))
}

/// What `bounce run` writes (`--out`), for which part of the sweep
/// (`--shard`), and whether it takes over the cases already there
/// (`--resume`).
struct RunOut<'a> {
    dir: Option<&'a Path>,
    shard: Option<(usize, usize)>,
    resume: bool,
    /// Which charts to draw into `dir/charts/`.
    charts: charts::ChartOptions,
}

/// What `bounce run` prints on stdout: the format, and for a sweep's
/// table the metric and whether only the table.
struct RunPrint<'a> {
    format: Format,
    metric: Option<&'a str>,
    compact: bool,
}

/// `bounce run`: the steps of one run in order (load, resume, build, run,
/// print, write), each a function or a few lines; one function so that
/// the command's control flow and exit codes read in one place.
fn run(
    file: &Path,
    inputs: &Inputs,
    check: bool,
    host_stats: bool,
    out: RunOut,
    quiet: bool,
    print: RunPrint,
) -> ExitCode {
    use scenarios::report::resume as resumed_cases;
    let RunOut {
        dir: out,
        shard,
        resume,
        charts: chart_options,
    } = out;
    let RunPrint {
        format,
        metric,
        compact,
    } = print;
    let metric = match metric
        .map(scenarios::report::text::metric_by_key)
        .transpose()
    {
        Ok(m) => m,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let mut options = BuildOptions::default();
    options.check_invariants |= check;
    let loaded = match inputs.load(file) {
        Ok(l) => l,
        Err(e) => return input_error(&e),
    };
    let in_this_shard =
        |index| shard.is_none_or(|(i, n)| scenarios::run::cases::in_shard(index, i, n));
    // The results' header (with the scenario's SHA-256) is for the records,
    // which only `--out` and the csv and json formats make: a text run
    // without `--out` skips it (see the records below).
    let header = (out.is_some() || format != Format::Text)
        .then(|| scenarios::report::output::header(&loaded, env!("CARGO_PKG_VERSION")));
    // The cases an earlier run into --out finished (--resume), of this shard.
    let mut resumed = resumed_cases::Resumed::default();
    if let (Some(dir), true, Some(header)) = (out, resume, &header) {
        match resumed_cases::load(dir, header, inputs.limits.data_file_bytes) {
            Ok(r) => resumed = r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
        resumed.cases.retain(|index, _| in_this_shard(*index));
    }
    // A shard builds only its own cases: another shard reports the errors of
    // the others.
    let cases = match scenarios::run::cases::build_cases_where(&loaded, options, |c| {
        in_this_shard(c.index) && !resumed.cases.contains_key(&c.index)
    }) {
        Ok(c) => c,
        Err(e) => return input_error(&e),
    };
    // Fail before the runs, not after, when the results cannot be written.
    if let Some(dir) = out {
        if let Err(code) = prepare_run_out(dir, resume, &resumed, cases.len()) {
            return code;
        }
    }
    let kept = std::sync::atomic::AtomicUsize::new(0);
    let results = if host_stats {
        let results = run_timed(&cases);
        if let Some(kib) = peak_resident_kib() {
            eprintln!("host: peak memory {:.1} MB resident", kib as f64 / 1024.0);
        }
        results
    } else {
        run_keeping_cases(&loaded, &cases, out.zip(header.as_ref()), quiet, &kept)
    };
    let measured = scenarios::run::measured::compare_cases(&loaded, &cases, &results);
    if format == Format::Text {
        print_run_report(
            &loaded,
            &results,
            &measured,
            !resumed.cases.is_empty(),
            shard,
            &scenarios::report::text::SweepView { metric, compact },
        );
    }
    if report_run_failures(&results) {
        // No records of a run with failures, printed or written: a script
        // would take them for the whole run. It sees the exit status and
        // the errors on stderr.
        if format != Format::Text {
            eprintln!("error: no records printed: some runs have no result");
        }
        if let Some(dir) = out {
            say_nothing_written(dir, kept.into_inner() + resumed.cases.len());
        }
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    // The records (each with a content hash over its JSON) are for the
    // formats that print them and for `--out`: a text run without `--out`
    // has printed everything it shows, and skips building them (it has no
    // header either).
    let Some(mut file) = header else {
        return ExitCode::SUCCESS;
    };
    // Every case's records: those run now and those resumed.
    let now = scenarios::report::output::records(&file, &cases, &results);
    (file.records, file.measured) = resumed_cases::combine(now, measured, resumed);
    match format {
        Format::Text => {}
        Format::Csv => print!("{}", scenarios::report::output::results_csv(&file)),
        Format::Json => print!("{}", scenarios::report::output::results_json(&file)),
    }
    match out {
        Some(dir) => write_run_out(dir, &file, shard, chart_options, quiet),
        None => ExitCode::SUCCESS,
    }
}

/// Readies `--out DIR` before the runs: created, and cleared of an earlier
/// run's finished cases unless `--resume` (which says what it takes over).
fn prepare_run_out(
    dir: &Path,
    resume: bool,
    resumed: &scenarios::report::resume::Resumed,
    to_run: usize,
) -> Result<(), ExitCode> {
    if let Err(e) = create_dir(dir, "--out") {
        eprintln!("{e}");
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    if !resume {
        if let Err(e) = scenarios::report::resume::clear(dir) {
            eprintln!(
                "error: cannot remove the finished cases of an earlier run from `{}`: {e}",
                dir.display()
            );
            return Err(ExitCode::from(EXIT_BAD_INPUT));
        }
    } else {
        eprintln!(
            "bounce: resuming in `{}`: {} case(s) already done, {} to run{}",
            dir.display(),
            resumed.cases.len(),
            to_run,
            if resumed.stale > 0 {
                format!(
                    " ({} kept case(s) of another scenario file, version or case run again)",
                    resumed.stale
                )
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// Runs the cases with a progress display; with `--out` (its directory
/// and the results' header), each finished case is kept there as it
/// finishes, so that a run cut short can be resumed, and counted in
/// `kept`.
fn run_keeping_cases(
    loaded: &LoadedScenario,
    cases: &[scenarios::run::cases::BuiltCase],
    out: Option<(&Path, &scenarios::report::output::ResultsFile)>,
    quiet: bool,
    kept: &std::sync::atomic::AtomicUsize,
) -> Vec<scenarios::run::cases::CaseResult> {
    let runs: usize = cases.iter().map(|c| c.variants.len()).sum();
    let progress = progress::Progress::new(runs, "runs", quiet);
    let keep_failed = std::sync::atomic::AtomicBool::new(false);
    let budget = scenarios::run::cases::run_budget_bytes(loaded, cases);
    let results = scenarios::run::cases::run_cases_observed(
        cases,
        budget,
        &|| progress.done_one(),
        &|built, result| {
            let Some((dir, header)) = out else {
                return;
            };
            let measured = scenarios::run::measured::compare_cases(
                loaded,
                std::slice::from_ref(built),
                std::slice::from_ref(result),
            );
            match scenarios::report::resume::save(dir, header, built, result, measured) {
                Ok(true) => {
                    kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(false) => {}
                Err(e) if !keep_failed.swap(true, std::sync::atomic::Ordering::Relaxed) => {
                    eprintln!(
                        "warning: cannot keep finished cases in `{}` for --resume: {e}",
                        dir.display()
                    );
                }
                Err(_) => {}
            }
        },
    );
    progress.finish();
    results
}

/// Prints the text report of `bounce run`: a sweep's table, or the one
/// case's comparison and attribution, then the measured comparison; or
/// why nothing ran.
fn print_run_report(
    loaded: &LoadedScenario,
    results: &[scenarios::run::cases::CaseResult],
    measured: &[scenarios::run::measured::Comparison],
    any_resumed: bool,
    shard: Option<(usize, usize)>,
    view: &scenarios::report::text::SweepView,
) {
    let name = &loaded.base.doc.name;
    // Under the report, where a reader of the figures sees it.
    let clock_note = || {
        if let Some(note) = scenarios::machine_clock_note(loaded) {
            println!("\nnote: {note}");
        }
    };
    match (&loaded.sweep, results.first()) {
        (Some(sweep), _) => {
            print!(
                "{}",
                scenarios::report::text::sweep_report_with(
                    name,
                    sweep,
                    results,
                    loaded.cases.len(),
                    shard,
                    view,
                )
            );
            let table = scenarios::report::measured::table(measured);
            if !table.is_empty() {
                print!("\n{table}");
            }
            clock_note();
        }
        (None, Some(case)) => {
            print!(
                "{}",
                scenarios::report::text::full_report(name, &case.results)
            );
            let table = scenarios::report::measured::table(measured);
            if !table.is_empty() {
                print!("\n{table}");
            }
            clock_note();
        }
        (None, None) if any_resumed => {
            println!("bounce: {name}: its one case was done already; nothing run");
        }
        (None, None) => {
            let (i, n) = shard.unwrap_or((0, 1));
            println!("bounce: {name}: shard {i}/{n} holds none of its 1 case(s)");
        }
    }
}

/// Says that a run with failures wrote nothing to `--out DIR`, and how
/// many finished cases are kept there for `--resume`; results files
/// already in DIR are said to be an earlier run's, not this one's.
fn say_nothing_written(dir: &Path, kept: usize) {
    use scenarios::report::output::{FIELDS_CSV, RESULTS_CSV, RESULTS_JSON};
    let earlier: Vec<&str> = [RESULTS_CSV, RESULTS_JSON, FIELDS_CSV]
        .into_iter()
        .filter(|f| dir.join(f).is_file())
        .collect();
    let earlier = if earlier.is_empty() {
        String::new()
    } else {
        format!(
            "; the {} there {} an earlier run's, not this one's",
            earlier.join(", "),
            if earlier.len() == 1 { "is" } else { "are" }
        )
    };
    if kept > 0 {
        eprintln!(
            "error: nothing written to `{}`: some runs have no result; the {kept} case(s) that finished are kept there, and `--resume` runs only the others{earlier}",
            dir.display()
        );
    } else {
        eprintln!(
            "error: nothing written to `{}`: some runs have no result{earlier}",
            dir.display()
        );
    }
}

/// Reports each run without a result on stderr, its error with the file
/// and line (the only place it is said: the text report marks the run
/// FAILED and points here); whether there was one.
fn report_run_failures(results: &[scenarios::run::cases::CaseResult]) -> bool {
    let mut failed = false;
    for case in results {
        for f in case.failures() {
            failed = true;
            let run = if case.id.is_empty() {
                format!("variant `{}`", f.name)
            } else {
                format!("case `{}`, variant `{}`", case.id, f.name)
            };
            eprintln!("{}", f.report(&run).render(stderr_in_colour()));
        }
    }
    failed
}

/// Writes the results files and the charts into `--out DIR`, then removes
/// the finished cases kept for `--resume` (the results hold them now).
fn write_run_out(
    dir: &Path,
    file: &scenarios::report::output::ResultsFile,
    shard: Option<(usize, usize)>,
    chart_options: charts::ChartOptions,
    quiet: bool,
) -> ExitCode {
    let manifest = shard.map(|(i, n)| scenarios::report::output::manifest(file, i, n));
    if let Err(e) = scenarios::report::output::write_results(dir, file, manifest.as_ref()) {
        eprintln!(
            "error: cannot write the results to `{}`: {e}",
            dir.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if let Err(e) = write_charts(dir, file, chart_options, quiet) {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    // The results files hold every case now.
    if let Err(e) = scenarios::report::resume::clear(dir) {
        eprintln!(
            "warning: cannot remove `{}`: {e}",
            dir.join(scenarios::report::resume::RESUME_DIR).display()
        );
    }
    ExitCode::SUCCESS
}

/// Writes `DIR/charts/` (after the results files, in one atomic write of
/// their own), removing the SVGs an earlier run left there (in `charts/`,
/// `charts/machines/` and `charts/cases/*/`) that this one does not draw.
/// Unless `quiet`, says on stderr where a sweep's per-case charts are.
fn write_charts(
    dir: &Path,
    file: &scenarios::report::output::ResultsFile,
    options: charts::ChartOptions,
    quiet: bool,
) -> Result<(), String> {
    let drawn =
        charts::charts_with(file, options).map_err(|e| format!("cannot draw the charts: {e}"))?;
    let chart_dir = dir.join("charts");
    let names: std::collections::BTreeSet<&str> = drawn.iter().map(|c| c.0.as_str()).collect();
    // The folders bounce draws into: `charts/`, `machines/`, each case's.
    let mut folders = vec![chart_dir.clone(), chart_dir.join(charts::MACHINES_DIR)];
    if let Ok(entries) = std::fs::read_dir(chart_dir.join(charts::CASES_DIR)) {
        folders.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    for folder in &folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let relative = path
                .strip_prefix(&chart_dir)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            if relative.ends_with(".svg") && !names.contains(relative.as_str()) {
                let _ = std::fs::remove_file(&path);
            }
        }
        // A folder left empty goes too (not `charts/` itself).
        if *folder != chart_dir {
            let _ = std::fs::remove_dir(folder);
        }
    }
    let _ = std::fs::remove_dir(chart_dir.join(charts::CASES_DIR));
    let files: Vec<(&str, String)> = drawn.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
    scenarios::report::output::write_atomically(&chart_dir, &files)
        .map_err(|e| format!("cannot write the charts to `{}`: {e}", chart_dir.display()))?;
    if !quiet && file.cases.len() > 1 {
        let in_folder = |folder: &str| {
            drawn
                .iter()
                .filter(|(n, _)| n.starts_with(&format!("{folder}/")))
                .count()
        };
        let top = drawn.iter().filter(|(n, _)| !n.contains('/')).count();
        let mut parts = vec![format!("{top} for the sweep")];
        let machines = in_folder(charts::MACHINES_DIR);
        if machines > 0 {
            parts.push(format!(
                "{machines} per machine in `{}/`",
                charts::MACHINES_DIR
            ));
        }
        let cases = file.cases.len();
        if options.per_case {
            parts.push(format!(
                "{} of the {cases} cases' own in `{}/CASE/`",
                in_folder(charts::CASES_DIR),
                charts::CASES_DIR
            ));
        } else {
            parts.push(format!(
                "each case's own (attribution, c2c, line maps; {cases} cases) with --case-charts"
            ));
        }
        eprintln!(
            "bounce: charts in `{}`: {}",
            chart_dir.display(),
            parts.join("; ")
        );
    }
    Ok(())
}

/// Runs every variant of every case one at a time on this thread, timing
/// each with the host clock (the simulation itself never reads it).
/// The process's peak resident memory (`VmHWM`), where Linux tells it.
fn peak_resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// A run's failure is returned by value, as `run_cases` does: failures are
// rare and never on a hot path.
#[allow(clippy::result_large_err)]
fn run_timed(cases: &[scenarios::run::cases::BuiltCase]) -> Vec<scenarios::run::cases::CaseResult> {
    cases
        .iter()
        .map(|case| scenarios::run::cases::CaseResult {
            index: case.index,
            id: case.id.clone(),
            seed: case.seed,
            values: case.values.clone(),
            results: case.variants.iter().map(|b| {
            let start = std::time::Instant::now();
            let result = scenarios::run::results::run_variant(b);
            let seconds = start.elapsed().as_secs_f64();
            if let Ok(r) = &result {
                let label = if case.id.is_empty() {
                    b.name.clone()
                } else {
                    format!("{} {}", case.id, b.name)
                };
                eprintln!(
                    "host: {:<18} {:>8.3} s  {:>12} memory ops  {:>10} events  {:>8.2} M ops/s  {:>8.2} M events/s",
                    label,
                    seconds,
                    r.outcome.memory_ops,
                    r.outcome.events,
                    r.outcome.memory_ops as f64 / seconds / 1e6,
                    r.outcome.events as f64 / seconds / 1e6
                );
            }
            result
        })
        .collect(),
        })
        .collect()
}

/// `bounce merge OUT SHARD...`: nothing is written unless every check passes.
fn import_btf(file: &Path, struct_name: &str, write: Option<&Path>) -> ExitCode {
    let table = match scenarios::tools::import::btf_struct_table(file, struct_name) {
        Ok(table) => table,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    match write {
        Some(path) => match write_whole(path, table) {
            Ok(()) => ExitCode::SUCCESS,
            Err(code) => code,
        },
        None => {
            print!("{table}");
            ExitCode::SUCCESS
        }
    }
}

fn merge(
    out: &Path,
    shards: &[PathBuf],
    limits: &scenarios::Limits,
    chart_options: charts::ChartOptions,
) -> ExitCode {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if shards.iter().any(|s| canonical(s) == canonical(out)) {
        eprintln!(
            "error: `{}` is one of the shard directories; merge into another directory",
            out.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    // Every directory is read before any error is reported, so that one
    // message lists all the shards to run again.
    let (merged, shard_count) =
        match scenarios::report::output::merge_dirs(shards, limits.data_file_bytes) {
            Ok(m) => m,
            Err(e) => {
                for line in e.lines() {
                    eprintln!("error: {line}");
                }
                eprintln!("error: nothing written to `{}`", out.display());
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
    if let Err(e) = scenarios::report::output::write_results(out, &merged, None) {
        eprintln!(
            "error: cannot write the results to `{}`: {e}",
            out.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if let Err(e) = write_charts(out, &merged, chart_options, false) {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    println!(
        "bounce: merged {} shard(s) of `{}`: {} case(s), {} run(s), into `{}`",
        shard_count,
        merged.scenario.name,
        merged.cases.len(),
        merged.records.len(),
        out.display()
    );
    ExitCode::SUCCESS
}

fn presets(action: Option<PresetsAction>, format: Format, limits: &scenarios::Limits) -> ExitCode {
    use scenarios::tools::presets_view::{self as view, ShowFormat};
    match action {
        None => {
            print!(
                "{}",
                match format {
                    Format::Text => view::list(),
                    Format::Csv => view::list_csv(),
                    Format::Json => view::list_json(),
                }
            );
            ExitCode::SUCCESS
        }
        Some(PresetsAction::Show { name, toml }) if is_machine_file(&name) => {
            if toml || format != Format::Text {
                eprintln!(
                    "error: `{name}` is a machine file: it is shown as text (it is a [machine] \
                     table already); --toml and --format csv|json show presets"
                );
                return ExitCode::from(EXIT_BAD_INPUT);
            }
            match scenarios::machine_file_view(Path::new(&name), limits) {
                Ok(view) => {
                    if let Some(note) = &view.clock_note {
                        eprintln!("warning: {note}");
                    }
                    print!(
                        "{}",
                        scenarios::tools::presets_view::describe_machine_file(&name, &view)
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => input_error(&e),
            }
        }
        Some(PresetsAction::Show { name, toml }) => {
            let show_format = match (format, toml) {
                (Format::Text, false) => ShowFormat::Text,
                (Format::Text, true) => ShowFormat::Toml,
                (Format::Csv, false) => ShowFormat::Csv,
                (Format::Json, false) => ShowFormat::Json,
                (_, true) => {
                    eprintln!(
                        "error: --toml and --format csv|json are different outputs; give one"
                    );
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            };
            match view::show_as(&name, show_format) {
                Ok(text) => {
                    print!("{text}");
                    ExitCode::SUCCESS
                }
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::from(EXIT_BAD_INPUT)
                }
            }
        }
    }
}

/// Whether `presets show NAME` names a machine file rather than a preset:
/// a path ending in `.toml`, one with a directory in it, or a file that
/// exists (no preset name is any of these). A directory's path is then
/// refused as the machine file it is not, rather than as an unknown preset.
fn is_machine_file(name: &str) -> bool {
    name.ends_with(".toml") || name.contains(std::path::MAIN_SEPARATOR) || Path::new(name).is_file()
}

/// `validate` over the shipped matrices (or those of `--data`).
fn validate_shipped(
    machine: Option<String>,
    data: Option<PathBuf>,
    quiet: bool,
    limits: &scenarios::Limits,
) -> Result<scenarios::tools::validate::ValidationReport, ExitCode> {
    let options = scenarios::tools::validate::ValidateOptions {
        machine,
        data_dir: data,
        limits: *limits,
    };
    // The progress starts once the matrices are read (a bad one is an
    // error before any simulation).
    let progress: std::sync::OnceLock<progress::Progress> = std::sync::OnceLock::new();
    let report = scenarios::tools::validate::validate_observed(
        &options,
        &|machines| {
            let _ = progress.set(progress::Progress::new(machines, "machines", quiet));
        },
        &|| {
            if let Some(p) = progress.get() {
                p.done_one();
            }
        },
    );
    if let Some(p) = progress.into_inner() {
        p.finish();
    }
    report.map_err(|message| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_BAD_INPUT)
    })
}

/// `validate --machine FILE --matrix CSV`: a user's machine file against a
/// user's matrix.
fn validate_user(
    machine: Option<&str>,
    matrix: &Path,
    facts: &scenarios::tools::validate::UserMatrixFacts,
    limits: &scenarios::Limits,
) -> Result<scenarios::tools::validate::ValidationReport, ExitCode> {
    let Some(machine) = machine else {
        eprintln!(
            "error: --matrix {} needs --machine FILE: the machine file (a [machine] table, as \
             `bounce presets show NAME --toml` prints it) the matrix was measured on",
            matrix.display()
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    };
    if !Path::new(machine).exists() && models::presets::resolve(machine).is_ok() {
        eprintln!(
            "error: --matrix takes the machine as a file, and `{machine}` is a preset: \
             `bounce presets show {machine} --toml > {machine}.toml`, edit it to the measured \
             machine, then `--machine {machine}.toml`"
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    let machine = Path::new(machine);
    let view = scenarios::machine_file_view(machine, limits).map_err(|e| input_error(&e))?;
    // A preset's legs kept in cycles at another clock are what a fit
    // against measured nanoseconds most needs to know about.
    if let Some(note) = &view.clock_note {
        eprintln!("warning: {note}");
    }
    let topology = view.topology;
    let measured = scenarios::tools::validate::matrix::read(matrix, limits.data_file_bytes)
        .map_err(|message| {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_BAD_INPUT)
        })?;
    scenarios::tools::validate::validate_user(
        machine,
        topology.spec.clone(),
        matrix,
        &measured,
        facts,
    )
    .map_err(|message| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_BAD_INPUT)
    })
}

/// `--home-node`, `--known-miss` and `--fitted`, read (the classes are
/// resolved against the machine later); an error names the option.
fn user_matrix_facts(
    home_node: Option<&str>,
    known_misses: &[String],
    fitted: &[String],
    numbering: scenarios::tools::validate::CpuNumbering,
) -> Result<scenarios::tools::validate::UserMatrixFacts, String> {
    use scenarios::tools::validate::{parse_home_node, parse_known_miss};
    Ok(scenarios::tools::validate::UserMatrixFacts {
        home: home_node.map(parse_home_node).transpose()?,
        numbering,
        known_misses: known_misses
            .iter()
            .map(|given| parse_known_miss(given))
            .collect(),
        fitted: (!fitted.is_empty()).then(|| fitted.to_vec()),
    })
}

/// What `validate` compares: the shipped matrices (or `--data`'s), those of
/// one preset (`--machine PRESET`), or a user's machine file and matrix
/// (`--machine FILE --matrix CSV`).
struct ValidateInputs {
    machine: Option<String>,
    data: Option<PathBuf>,
    matrix: Option<PathBuf>,
    /// `--home-node`, with `--matrix`.
    home_node: Option<String>,
    /// `--known-miss`, with `--matrix`.
    known_misses: Vec<String>,
    /// `--fitted`, with `--matrix`.
    fitted: Vec<String>,
    /// `--sibling-numbering`, with `--matrix`.
    sibling_numbering: SiblingNumbering,
    /// `--cpu-map`, with `--matrix`.
    cpu_map: Option<PathBuf>,
}

fn validate(
    inputs: ValidateInputs,
    csv: Option<PathBuf>,
    out: Option<&Path>,
    format: Format,
    strict: bool,
    quiet: bool,
    limits: &scenarios::Limits,
) -> ExitCode {
    let ValidateInputs {
        machine,
        data,
        matrix,
        home_node,
        known_misses,
        fitted,
        sibling_numbering,
        cpu_map,
    } = inputs;
    if let Some(Err(code)) = csv.as_deref().map(refuse_existing) {
        return code;
    }
    use scenarios::tools::validate::{CpuNumbering, SiblingNumbering as Siblings};
    let numbering = match cpu_map {
        Some(map) => match scenarios::tools::validate::cpumap::read(&map, limits.data_file_bytes) {
            Ok(map) => CpuNumbering::Map(map),
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
        None => CpuNumbering::Siblings(match sibling_numbering {
            SiblingNumbering::Apart => Siblings::Apart,
            SiblingNumbering::Adjacent => Siblings::Adjacent,
        }),
    };
    let facts = match user_matrix_facts(home_node.as_deref(), &known_misses, &fitted, numbering) {
        Ok(f) => f,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let report = match matrix {
        Some(matrix) => validate_user(machine.as_deref(), &matrix, &facts, limits),
        None => validate_shipped(machine, data, quiet, limits),
    };
    let report = match report {
        Ok(r) => r,
        Err(code) => return code,
    };
    print!(
        "{}",
        match format {
            Format::Text => report.render(),
            Format::Csv => report.to_csv(),
            Format::Json => report.to_json(),
        }
    );
    if format != Format::Text {
        // The table prints its warnings; the records have no place for them.
        for warning in report.machines.iter().flat_map(|m| &m.warnings) {
            eprintln!("warning: {warning}");
        }
    }
    if let Some(path) = csv {
        if let Err(code) = write_whole(&path, report.to_csv()) {
            return code;
        }
    }
    if let Some(dir) = out {
        let charts = match charts::validation_charts(&report) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: cannot draw the validation charts: {e}");
                return ExitCode::from(EXIT_RUN_FAILED);
            }
        };
        let mut files: Vec<(&str, String)> = vec![("validation.csv", report.to_csv())];
        files.extend(charts.iter().map(|(n, s)| (n.as_str(), s.clone())));
        if let Err(e) = scenarios::report::output::write_atomically(dir, &files) {
            eprintln!("error: cannot write to `{}`: {e}", dir.display());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        eprintln!(
            "bounce: wrote {} to `{}`",
            files.iter().map(|f| f.0).collect::<Vec<_>>().join(", "),
            dir.display()
        );
    }
    if report.passes(strict) {
        ExitCode::SUCCESS
    } else if strict && report.unexpected_misses().is_empty() {
        eprintln!("error: --strict: some classes are outside their bound, as documented known misses (see the table)");
        ExitCode::from(EXIT_RUN_FAILED)
    } else {
        eprintln!("error: some classes are outside their bound (see the table)");
        ExitCode::from(EXIT_RUN_FAILED)
    }
}

/// `bounce limits`: every bound, its value (as raised or lowered by
/// `--set-limit`) and why it exists; then the fixed ones.
fn show_limits(limits: &scenarios::Limits) -> ExitCode {
    use sim_core::limits::{FIXED, LIMITS};
    println!("Bounds on input size and run length; raise one with --set-limit NAME=VALUE.\n");
    let width = LIMITS.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for l in LIMITS {
        let value = limits.get(l.name).unwrap_or(l.default);
        let changed = if value == l.default {
            String::new()
        } else {
            format!(" (default {})", l.default)
        };
        println!("{:width$}  {value} {}{changed}", l.name, l.unit);
        for line in l.why.lines() {
            println!("{:width$}    {}", "", line.trim());
        }
    }
    println!("\nFixed bounds (part of the program; raising one is a change to sim-core/src/limits.rs):\n");
    let width = FIXED.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for l in FIXED {
        println!("{:width$}  {} {}", l.name, l.value, l.unit);
        println!("{:width$}    {}", "", l.why);
    }
    println!(
        "\nThe simulated-cycle budget of a run is the scenario's `run.max_cycles` (default \
         10000000000, at most the limit `max_cycles`)."
    );
    println!(
        "Host threads: `--jobs` from 1 to {}; runs in parallel share `host_memory_bytes`.",
        scenarios::run::budget::MAX_JOBS
    );
    print!("{HOST_TIME}");
    ExitCode::SUCCESS
}

/// What `bounce limits` says of host time: the rates measured, and what
/// bounds a run's time and what does not yet.
const HOST_TIME: &str = "
Host time (measured on a 2-core shared host, release build; benches/FIGURES.md
has the method): a CPU in a loop of script operations simulates about 2*10^7
cycles per host second; script operations run at 5*10^7 (calls) to 1.8*10^8
(register arithmetic) per second, and memory accesses and events at 1 to 20
million per second. A run ends within `events` events, `run.max_cycles`
simulated cycles and `operations` script operations per CPU (counted from
above: each script or procedure entered and each loop body gone round again
is charged its whole length), whichever comes first. Its host time is
therefore at most about (running CPUs x operations) / 5*10^7 seconds plus
its events' time: some 600 s per running CPU at the default 3*10^10
operations, and at most events / 10^6 s more. Lower `operations` (and
`events`) for untrusted scenarios.
";

/// What `check` reports of one built variant: its row of `--format csv`.
fn check_row(b: &BuiltVariant) -> [serde_json::Value; 5] {
    let c = &b.config;
    [
        b.name.clone().into(),
        c.topology.spec.name.clone().into(),
        c.topology.cpu_count().into(),
        c.threads.len().into(),
        c.memory.unit_count().into(),
    ]
}

const CHECK_COLUMNS: [&str; 5] = [
    "variant",
    "machine",
    "machine_cpus",
    "running_cpus",
    "memory_lines",
];

/// A JSON value as a CSV cell: strings bare, numbers as JSON writes them,
/// null empty.
fn json_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check(file: &Path, inputs: &Inputs, format: Format) -> ExitCode {
    // The file's own documents first, so that an error of the file is
    // reported as such rather than as the first case's.
    let (loaded, built) = match load_and_build(file, inputs, BuildOptions::default()) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let as_written: Vec<[serde_json::Value; 5]> = built.iter().map(check_row).collect();
    // The CPUs the threads run on: fewer than the threads when a group's
    // `count` puts several threads on a CPU.
    let cpus_used: Vec<usize> = built
        .iter()
        .map(|b| {
            let cpus: std::collections::BTreeSet<_> =
                b.config.threads.iter().map(|t| t.cpu).collect();
            cpus.len()
        })
        .collect();
    let names: Vec<String> = built.iter().map(|b| b.name.clone()).collect();
    // The variants built above go before the cases are built: the cases
    // hold their own, and both at once would double what the build checked
    // against the memory bound.
    drop(built);
    // Every case is built, so each case's machine and CPUs are checked.
    let cases = match scenarios::run::cases::build_cases(&loaded, BuildOptions::default()) {
        Ok(c) => c,
        Err(e) => return input_error(&e),
    };
    let case_rows: Vec<(usize, String, Vec<[serde_json::Value; 5]>)> = cases
        .iter()
        .map(|c| {
            (
                c.index,
                c.id.clone(),
                c.variants.iter().map(check_row).collect(),
            )
        })
        .collect();
    let mut machines: Vec<(String, u32, usize)> = Vec::new();
    for c in &cases {
        if let Some(b) = c.variants.first() {
            let name = &b.config.topology.spec.name;
            match machines.iter_mut().find(|m| &m.0 == name) {
                Some(m) => m.2 += 1,
                None => machines.push((name.clone(), b.config.topology.cpu_count(), 1)),
            }
        }
    }
    let variants_per_case = cases.first().map_or(0, |c| c.variants.len());
    let budget = scenarios::run::cases::run_budget_bytes(&loaded, &cases);
    let estimates = scenarios::run::estimate::estimate_cases(&cases, budget);
    let case_count = cases.len();
    drop(cases);
    let axes: Vec<(String, Vec<String>)> = loaded.sweep.as_ref().map_or_else(Vec::new, |s| {
        s.axes
            .iter()
            .map(|a| {
                (
                    a.name.clone(),
                    a.values.iter().map(|v| v.to_string()).collect(),
                )
            })
            .collect()
    });
    let checked = Checked {
        as_written,
        cpus_used,
        names,
        case_rows,
        machines,
        variants_per_case,
        estimates,
        case_count,
        axes,
    };
    match format {
        Format::Text => print_check_text(file, &loaded, &checked),
        Format::Csv => print_check_csv(&checked),
        Format::Json => print_check_json(file, &loaded, &checked),
    }
    ExitCode::SUCCESS
}

/// What `bounce check` found, for each format to print.
struct Checked {
    /// A row per variant as the file writes it ([`CHECK_COLUMNS`]).
    as_written: Vec<[serde_json::Value; 5]>,
    /// Per variant, the CPUs its threads run on (fewer than the threads
    /// when a group's `count` puts several threads on a CPU).
    cpus_used: Vec<usize>,
    /// The variants' names.
    names: Vec<String>,
    /// Per case: its index, id and a row per variant.
    case_rows: Vec<(usize, String, Vec<[serde_json::Value; 5]>)>,
    /// Each machine the cases run on: name, CPUs, cases.
    machines: Vec<(String, u32, usize)>,
    variants_per_case: usize,
    estimates: Vec<scenarios::run::estimate::CaseEstimate>,
    case_count: usize,
    /// The sweep's axes: name and values as case ids show them.
    axes: Vec<(String, Vec<String>)>,
}

impl Checked {
    fn estimate_of(&self, index: usize) -> Option<&scenarios::run::estimate::CaseEstimate> {
        self.estimates.iter().find(|e| e.index == index)
    }
}

/// `bounce check --format csv`: a row per variant of each case.
fn print_check_csv(checked: &Checked) {
    let mut columns = vec!["case_index", "case_id"];
    columns.extend(CHECK_COLUMNS);
    columns.extend(["case_events_estimate", "case_memory_ops_estimate"]);
    let mut cells: Vec<Vec<String>> = Vec::new();
    for (index, id, rows) in &checked.case_rows {
        let e = checked.estimate_of(*index);
        for r in rows {
            let mut row = vec![index.to_string(), id.clone()];
            row.extend(r.iter().map(json_cell));
            row.push(
                e.and_then(|e| e.events)
                    .map_or(String::new(), |n| n.to_string()),
            );
            row.push(
                e.and_then(|e| e.memory_ops)
                    .map_or(String::new(), |n| n.to_string()),
            );
            cells.push(row);
        }
    }
    print!("{}", scenarios::report::output::csv_table(&columns, &cells));
}

/// `bounce check --format json`: the variants as written, the axes and
/// each case with its variants and estimates.
fn print_check_json(file: &Path, loaded: &LoadedScenario, checked: &Checked) {
    let object = |r: &[serde_json::Value; 5]| {
        serde_json::Value::Object(
            CHECK_COLUMNS
                .iter()
                .zip(r)
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    };
    let cases_json: Vec<serde_json::Value> = checked
        .case_rows
        .iter()
        .map(|(index, id, rows)| {
            let e = checked.estimate_of(*index);
            serde_json::json!({
                "case_index": index,
                "case_id": id,
                "variants": rows.iter().map(object).collect::<Vec<_>>(),
                "events_estimate": e.and_then(|e| e.events),
                "memory_ops_estimate": e.and_then(|e| e.memory_ops),
                "estimate_failure": e.and_then(|e| e.failure.clone()),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "file": file.display().to_string(),
        "scenario": loaded.base.doc.name,
        "variants": checked.as_written.iter().map(object).collect::<Vec<_>>(),
        "axes": checked.axes
            .iter()
            .map(|(name, values)| serde_json::json!({"name": name, "values": values}))
            .collect::<Vec<_>>(),
        "runs": checked.case_count * checked.variants_per_case,
        "estimate_probe_cycles": scenarios::run::estimate::PROBE_CYCLES,
        "cases": cases_json,
    });
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
}

/// `bounce check`'s text: the variants, the sweep and its machines, the
/// runs, then the estimated cost.
fn print_check_text(file: &Path, loaded: &LoadedScenario, checked: &Checked) {
    let (axes, case_count) = (&checked.axes, checked.case_count);
    println!(
        "{}: ok: scenario `{}`, {} variant(s): {}",
        file.display(),
        loaded.base.doc.name,
        checked.names.len(),
        checked.names.join(", ")
    );
    for (r, &cpus) in checked.as_written.iter().zip(&checked.cpus_used) {
        let threads = r[3].as_u64().unwrap_or(0);
        let running = if threads == cpus as u64 {
            format!("{cpus} running CPU{}", if cpus == 1 { "" } else { "s" })
        } else {
            format!(
                "{threads} threads on {cpus} CPU{}",
                if cpus == 1 { "" } else { "s" }
            )
        };
        println!(
            "  {}: {} ({} CPUs), {running}, {} lines of memory",
            json_cell(&r[0]),
            json_cell(&r[1]),
            r[2],
            r[4]
        );
    }
    if !axes.is_empty() {
        // Long axes show their ends; `--format csv` lists every case.
        let shown = |values: &[String]| {
            if values.len() <= 6 {
                values.join(", ")
            } else {
                format!(
                    "{}, ..., {}",
                    values[..3].join(", "),
                    values[values.len() - 2..].join(", ")
                )
            }
        };
        println!(
            "  sweep: {case_count} case(s) over {} ax{}: {}",
            axes.len(),
            if axes.len() == 1 { "is" } else { "es" },
            axes.iter()
                .map(|(name, values)| format!("{name} ({}: {})", values.len(), shown(values)))
                .collect::<Vec<_>>()
                .join("; ")
        );
        println!(
            "  machines: {} (each case built and checked on its machine)",
            checked
                .machines
                .iter()
                .map(|(name, cpus, n)| format!("{name} ({cpus} CPUs) in {n} case(s)"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!(
        "  runs: {case_count} case(s) x {} variant(s) = {} run(s)",
        checked.variants_per_case,
        case_count * checked.variants_per_case
    );
    print_check_cost(&checked.estimates, case_count);
}

/// The estimated events and memory operations of the runs (per case and
/// in all for a sweep), and the cases that have no estimate.
fn print_check_cost(estimates: &[scenarios::run::estimate::CaseEstimate], case_count: usize) {
    let counted: Vec<(u64, u64, &str)> = estimates
        .iter()
        .filter_map(|e| Some((e.events?, e.memory_ops?, e.id.as_str())))
        .collect();
    let si = scenarios::report::text::si;
    if let Some(&(most, _, most_id)) = counted.iter().max_by_key(|c| c.0) {
        let sum = |pick: fn(&(u64, u64, &str)) -> u64| {
            counted.iter().map(pick).fold(0u64, u64::saturating_add)
        };
        let (events, memory_ops) = (sum(|c| c.0), sum(|c| c.1));
        let how = format!(
            "estimated from the first {} simulated cycles of each run",
            si(scenarios::run::estimate::PROBE_CYCLES as f64)
        );
        if case_count == 1 {
            println!(
                "  cost: about {} events and {} memory operations ({how})",
                si(events as f64),
                si(memory_ops as f64)
            );
        } else {
            let per_case = |n: u64| si(n as f64 / counted.len() as f64);
            println!(
                "  cost: about {} events and {} memory operations per case, at most {} events (case `{most_id}`); {} events and {} memory operations in all ({how})",
                per_case(events),
                per_case(memory_ops),
                si(most as f64),
                si(events as f64),
                si(memory_ops as f64)
            );
        }
    }
    for e in estimates.iter().filter(|e| e.failure.is_some()) {
        let failure = e.failure.as_deref().unwrap_or_default();
        let first_line = failure.lines().next().unwrap_or_default();
        if e.id.is_empty() {
            println!("  cost: no estimate: {first_line}");
        } else {
            println!("  cost: no estimate for case `{}`: {first_line}", e.id);
        }
    }
}

fn trace(
    file: &Path,
    inputs: &Inputs,
    variant: Option<&str>,
    limit: usize,
    svg: Option<(&Path, usize, bool)>,
    quiet: bool,
    case: Option<&str>,
) -> ExitCode {
    if let Some(Err(code)) = svg.map(|(path, _, _)| refuse_existing(path)) {
        return code;
    }
    let (loaded, built, chosen) = match load_variant(file, inputs, variant, case) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let chosen = &built[chosen];
    let config = &chosen.config;
    println!(
        "trace of `{}` variant `{}` on {} ({}, lookup {}), first {limit} entries",
        loaded.base.doc.name,
        chosen.name,
        config.topology.spec.name,
        config.topology.spec.protocol.name().to_uppercase(),
        config.topology.spec.lookup.name()
    );
    let mut probe = TraceProbe::new(&config.topology, &config.memory, limit);
    let mut timeline = scenarios::report::timeline::TimelineProbe::new(
        &config.topology,
        &config.memory,
        svg.map_or(0, |s| s.1),
    );
    if svg.is_some_and(|s| !s.2) {
        timeline = timeline.without_prefetches();
    }
    // A long run drawn as a timeline shows that it is still going.
    let progress = progress::Progress::open_ended("runs", quiet || svg.is_none());
    let result = {
        let mut probes = sim_core::probe::Probes(vec![&mut probe, &mut timeline]);
        sim_core::engine::run(config, &mut probes)
    };
    progress.done_one();
    progress.finish();
    for line in probe.lines() {
        println!("{line}");
    }
    if probe.omitted > 0 {
        println!(
            "... {} more entries not shown (raise --limit)",
            probe.omitted
        );
    }
    if let Err(e) = &result {
        let report = scenarios::run::results::failure_report("the run", e, &chosen.sources);
        eprintln!("{}", report.render(stderr_in_colour()));
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    if let Some((path, steps, _)) = svg {
        let title = format!(
            "{}: coherence messages, variant {} on {}",
            loaded.base.doc.name, chosen.name, config.topology.spec.name
        );
        let drawn = timeline.transactions().len();
        let svg_text = match charts::timeline_chart(&title, &timeline, config) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot draw the timeline: {e}");
                return ExitCode::from(EXIT_RUN_FAILED);
            }
        };
        if let Err(code) = write_whole(path, svg_text) {
            return code;
        }
        let more = if timeline.seen > drawn as u64 {
            format!(
                "; {} more not drawn (--svg-steps {steps}; at most 200)",
                timeline.seen - drawn as u64
            )
        } else {
            String::new()
        };
        let left_out = match timeline.prefetches_left_out {
            0 => String::new(),
            n => format!(" ({n} adjacent-line prefetch(es) left out)"),
        };
        println!(
            "timeline: the first {drawn} of {} coherence transaction(s) drawn to {}{more}{left_out}",
            timeline.seen,
            path.display()
        );
    }
    ExitCode::SUCCESS
}

/// `optimize`: the layout search; the report on stdout, the winner as a
/// variant written whole or not at all.
fn optimize(
    file: &Path,
    inputs: &Inputs,
    options: scenarios::tools::optimize::OptimizeOptions,
    write_variant: Option<&Path>,
    quiet: bool,
    case: Option<&str>,
) -> ExitCode {
    if let Some(Err(code)) = write_variant.map(refuse_existing) {
        return code;
    }
    let loaded = match inputs.load(file) {
        Ok(l) => l,
        Err(e) => return input_error(&e),
    };
    // Without --case the search is over every case of the sweep.
    let loaded = match select_case(loaded, case, false) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let progress = progress::Progress::open_ended("runs", quiet);
    let report =
        scenarios::tools::optimize::optimize_observed(&loaded, &options, &|| progress.done_one());
    progress.finish();
    let report = match report {
        Ok(r) => r,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    print!("{}", report.render());
    if let Some(path) = write_variant {
        if let Err(code) = write_whole(path, &report.winner_variant) {
            return code;
        }
        println!("the winner written to {} as a variant", path.display());
    }
    ExitCode::SUCCESS
}

/// `--case ID`: the scenario narrowed to one case of its sweep (named by its
/// id, as `bounce check` and results.csv print it, or by its index), its
/// documents then being the base and the variants as that case runs them.
/// Without `--case`, a sweep is left whole; `note` then says on stderr that
/// the command shows the scenario as written, without its sweep.
fn select_case(
    mut loaded: LoadedScenario,
    case: Option<&str>,
    note: bool,
) -> Result<LoadedScenario, ExitCode> {
    let path = loaded.source.path.clone();
    let Some(wanted) = case else {
        if note && loaded.sweep.is_some() {
            eprintln!(
                "note: `{path}` sweeps {} case(s); this is the scenario as written, without its \
                 sweep (--case ID picks one, e.g. --case '{}')",
                loaded.cases.len(),
                loaded.cases.first().map_or("", |c| c.id.as_str())
            );
        }
        return Ok(loaded);
    };
    if loaded.sweep.is_none() {
        eprintln!(
            "error: --case {wanted}: `{path}` has no [sweep]; --case picks one of a sweep's cases"
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    let found = loaded
        .cases
        .iter()
        .position(|c| c.id == wanted)
        .or_else(|| {
            let index: usize = wanted.parse().ok()?;
            loaded.cases.iter().position(|c| c.index == index)
        });
    let Some(found) = found else {
        let ids: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
        let hint = scenarios::format::error::closest(wanted, &ids)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        const SHOWN: usize = 8;
        let mut listed = ids
            .iter()
            .take(SHOWN)
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ");
        if ids.len() > SHOWN {
            listed.push_str(&format!(
                ", ... ({} in all; `bounce check {path} --format csv` lists them)",
                ids.len()
            ));
        }
        eprintln!(
            "error: --case {wanted}: `{path}` has no such case{hint}; its cases (by id, or by index 0 to {}): {listed}",
            ids.len() - 1
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    };
    let case = loaded.cases.swap_remove(found);
    let mut documents = case.variants.clone().into_iter();
    if let Some(first) = documents.next() {
        loaded.base = first;
        loaded.variants = documents.collect();
    }
    loaded.cases = vec![case];
    Ok(loaded)
}

/// Loads and builds the scenario, and picks the variant named `variant`
/// (the base when `None`): the scenario, its built variants and the
/// chosen one's index, or an error naming the variants there are.
fn load_variant(
    file: &Path,
    inputs: &Inputs,
    variant: Option<&str>,
    case: Option<&str>,
) -> Result<(LoadedScenario, Vec<BuiltVariant>, usize), ExitCode> {
    let loaded = inputs.load(file).map_err(|e| input_error(&e))?;
    let loaded = select_case(loaded, case, true)?;
    let built = build_all(&loaded, BuildOptions::default()).map_err(|e| input_error(&e))?;
    let Some(name) = variant else {
        return Ok((loaded, built, 0));
    };
    if let Some(index) = built.iter().position(|b| b.name == name) {
        return Ok((loaded, built, index));
    }
    let names: Vec<&str> = built.iter().map(|b| b.name.as_str()).collect();
    let hint = scenarios::format::error::closest(name, &names)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    eprintln!(
        "error: `{}` has no variant `{name}`{hint}; variants: {}",
        file.display(),
        names.join(", ")
    );
    Err(ExitCode::from(EXIT_BAD_INPUT))
}

/// `layout`: the pahole-style view of one struct or of every struct an
/// instance uses, in one variant, optionally with a run's traffic. The
/// command's steps in order (choose, run, print), each a few lines.
fn layout(
    file: &Path,
    inputs: &Inputs,
    struct_name: Option<&str>,
    variant: Option<&str>,
    run: bool,
    case: Option<&str>,
) -> ExitCode {
    use scenarios::tools::layout_view::{laid_out_structs, render_struct, struct_traffic};
    let (loaded, built, chosen) = match load_variant(file, inputs, variant, case) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let chosen = &built[chosen];
    let Some(doc) = loaded.all().find(|v| v.name == chosen.name).map(|v| &v.doc) else {
        eprintln!("error: variant `{}` has no document", chosen.name);
        return ExitCode::from(EXIT_BAD_INPUT);
    };
    let structs = match laid_out_structs(&loaded, doc) {
        Ok(s) => s,
        Err(e) => return input_error(&e),
    };
    let memory = &chosen.config.memory;
    // Structs not shown though instances of them are placed.
    let mut left_out: Vec<String> = Vec::new();
    let shown: Vec<&models::layout::LaidOutStruct> = match struct_name {
        Some(name) => match structs.iter().find(|s| s.name == name) {
            Some(s) => vec![s],
            None => {
                let names: Vec<&str> = structs.iter().map(|s| s.name.as_str()).collect();
                let hint = scenarios::format::error::closest(name, &names)
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                eprintln!(
                    "error: `{}` has no struct `{name}`{hint}; structs: {}",
                    file.display(),
                    if names.is_empty() {
                        "(none)".to_string()
                    } else {
                        names.join(", ")
                    }
                );
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
        None => {
            let (shown, not_named) = structs_of_running_code(&structs, &chosen.config);
            left_out = not_named;
            shown
        }
    };
    let result = if run {
        match scenarios::run::results::run_variant(chosen) {
            Ok(r) => Some(r),
            Err(f) => {
                let report = f.report(&format!("variant `{}`", f.name));
                eprintln!("{}", report.render(stderr_in_colour()));
                return ExitCode::from(EXIT_RUN_FAILED);
            }
        }
    } else {
        None
    };
    let config = &chosen.config;
    print!(
        "layout of `{}` variant `{}` on {} ({}-byte lines",
        loaded.base.doc.name, chosen.name, config.topology.spec.name, memory.line_size_bytes
    );
    if config.topology.spec.adjacent_line_prefetch {
        print!(
            ", adjacent-line prefetch: a miss also reads the other line of its {}-byte pair",
            2 * memory.line_size_bytes
        );
    }
    match &result {
        Some(r) => println!(
            "), after {} iterations on {} in {} cycles",
            r.measured_iterations(),
            scenarios::report::text::counted(r.cpus.len() as u64, "CPU"),
            r.outcome.elapsed_cycles
        ),
        None => println!(")"),
    }
    for def in shown {
        let traffic = result
            .as_ref()
            .map(|r| struct_traffic(r, memory, &config.program.field_names, &def.name));
        println!();
        let instances = instances_of_struct(memory, &def.name);
        if !instances.is_empty() {
            println!("/* instances: {} */", instances.join(", "));
        }
        print!(
            "{}",
            render_struct(def, memory.line_size_bytes, traffic.as_ref())
        );
    }
    if !left_out.is_empty() {
        println!(
            "\nnot shown: {} (placed in memory, but no script or procedure this variant runs \
             names {}; --struct NAME shows one)",
            left_out.join(", "),
            if left_out.len() == 1 {
                "its instances"
            } else {
                "their instances"
            }
        );
    }
    ExitCode::SUCCESS
}

/// The instances of struct `name`, as `layout` lists them above it
/// (`NAME[N] (global)` for an array).
fn instances_of_struct(memory: &sim_core::memory::MemoryLayout, name: &str) -> Vec<String> {
    memory
        .instances
        .iter()
        .filter(|i| memory.structs[i.struct_index].name == name)
        .map(|i| {
            let count = i.element_addresses.len();
            if i.kind == sim_core::memory::InstanceKind::Global && count > 1 {
                format!("{}[{count}] ({})", i.name, i.kind.name())
            } else {
                format!("{} ({})", i.name, i.kind.name())
            }
        })
        .collect()
}

/// The structs `layout` shows without `--struct`, and the structs of
/// placed instances it leaves out (named as `` `NAME` ``).
fn structs_of_running_code<'s>(
    structs: &'s [models::layout::LaidOutStruct],
    config: &sim_core::engine::SimConfig,
) -> (Vec<&'s models::layout::LaidOutStruct>, Vec<String>) {
    let memory = &config.memory;
    // The structs of instances that code this variant runs names,
    // as the report and charts keep them
    // (`instances_named_by_running_code`); failing those, of every
    // instance; failing those, every struct.
    let named = scenarios::build::instances_named_by_running_code(config);
    let struct_of =
        |i: &sim_core::memory::InstanceDef| memory.structs[i.struct_index].name.as_str();
    let used: Vec<&str> = memory.instances.iter().map(struct_of).collect();
    let used_named: Vec<&str> = memory
        .instances
        .iter()
        .zip(&named)
        .filter(|(_, &n)| n)
        .map(|(i, _)| struct_of(i))
        .collect();
    let of = |names: &[&str]| -> Vec<&models::layout::LaidOutStruct> {
        structs
            .iter()
            .filter(|s| names.contains(&s.name.as_str()))
            .collect()
    };
    let (shown_named, instantiated) = (of(&used_named), of(&used));
    if !shown_named.is_empty() {
        let left_out = instantiated
            .iter()
            .filter(|s| !used_named.contains(&s.name.as_str()))
            .map(|s| format!("`{}`", s.name))
            .collect();
        (shown_named, left_out)
    } else if !instantiated.is_empty() {
        (instantiated, Vec::new())
    } else {
        (structs.iter().collect(), Vec::new())
    }
}

/// The checker's machine as `check-protocol`'s options give it.
struct CheckMachine {
    cores_per_l3: u32,
    /// None: the checker's default for the protocol.
    l3_shared_lines: Option<String>,
    directory: String,
    /// Caches may evict lines (`CheckConfig::evictions`).
    evictions: bool,
    /// Which lines caches may request for ownership with no store
    /// (`CheckConfig::ownership_prefetch`).
    ownership_prefetch: sim_core::checker::OwnershipPrefetch,
}

/// `check-protocol`: runs the exhaustive checker for one protocol or all
/// three, prints what it explored and how long it took (host time, measured
/// here), and any violation with its path; writes the replay scenario
/// (`replay_scenario`). One loop over the protocols, each step a few
/// lines that print as they go.
fn check_protocol(
    protocol: Option<&str>,
    [caches, lines, values, buffer]: [u32; 4],
    machine: CheckMachine,
    max_states: u64,
    max_bytes: u64,
    prefetch: bool,
    write_scenario: Option<&Path>,
) -> ExitCode {
    use sim_core::checker::{check, CheckConfig};
    if let Some(Err(code)) = write_scenario.map(refuse_existing) {
        return code;
    }
    use sim_core::topology::{DirectoryPrecision, L3SharedLines, Protocol};
    let protocols = match protocol {
        Some("mesi") => vec![Protocol::Mesi],
        Some("mesif") => vec![Protocol::Mesif],
        Some("moesi") => vec![Protocol::Moesi],
        _ => vec![Protocol::Mesi, Protocol::Mesif, Protocol::Moesi],
    };
    for protocol in protocols {
        let config = CheckConfig {
            caches,
            lines,
            values,
            buffer_depth: buffer,
            max_states,
            max_bytes,
            prefetch,
            evictions: machine.evictions,
            ownership_prefetch: machine.ownership_prefetch,
            cores_per_l3: machine.cores_per_l3,
            directory: match machine.directory.as_str() {
                "exact" => DirectoryPrecision::Exact,
                _ => DirectoryPrecision::BroadcastShared,
            },
            ..CheckConfig::new(protocol)
        };
        let config = CheckConfig {
            l3_shared_lines: match machine.l3_shared_lines.as_deref() {
                Some("not-kept") => L3SharedLines::NotKept,
                Some("inclusive") => L3SharedLines::Inclusive,
                Some("victim-with-sharing") => L3SharedLines::VictimWithSharing,
                _ => config.l3_shared_lines,
            },
            ..config
        };
        let start = std::time::Instant::now();
        let report = match check(&config) {
            Ok(r) => r,
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let seconds = start.elapsed().as_secs_f64();
        let ownership = match machine.ownership_prefetch {
            sim_core::checker::OwnershipPrefetch::Off => String::new(),
            kind => format!(", ownership prefetches ({})", kind.name()),
        };
        println!(
            "{}: {caches} caches x {lines} lines x {values} values, store buffers of {buffer}{}{ownership}: \
             {} states, {} transitions, depth {}, {} quiescent states, {seconds:.2} s",
            protocol.name().to_uppercase(),
            match (prefetch, machine.evictions) {
                (false, false) => "",
                (true, false) => ", prefetch reads",
                (false, true) => ", evictions",
                (true, true) => ", prefetch reads, evictions",
            },
            report.states,
            report.transitions,
            report.depth,
            report.quiescent_states,
        );
        println!(
            "  machine: {} cache(s) per L3 domain, L3 {}, {} directory; steps' accesses: {}",
            config.cores_per_l3,
            config.l3_shared_lines.name(),
            config.directory.name(),
            report.routes
        );
        if let Some(v) = &report.violation {
            print!("{v}");
            let Some(path) = write_scenario else {
                return ExitCode::from(EXIT_RUN_FAILED);
            };
            let text = replay_scenario(&config, [caches, lines, values, buffer], v);
            if let Err(code) = write_whole(path, text) {
                return code;
            }
            println!("replay scenario written to {}", path.display());
            return ExitCode::from(EXIT_RUN_FAILED);
        }
        if !report.complete {
            match report.stopped_by {
                Some(sim_core::checker::CheckBudget::Memory) => eprintln!(
                    "error: stopped at {} states, depth {}, without a verdict: the states kept \
                     would take about {} MiB, more than the limit of {} MiB; raise it with \
                     `--set-limit host_memory_bytes=N`, or check fewer caches, lines or values",
                    report.states,
                    report.depth,
                    report.bytes >> 20,
                    max_bytes >> 20
                ),
                _ => eprintln!(
                    "error: stopped at {} states, depth {}, without a verdict (raise \
                     --max-states)",
                    report.states, report.depth
                ),
            }
            return ExitCode::from(EXIT_RUN_FAILED);
        }
        println!("  no violation: every invariant holds in every reachable state");
    }
    ExitCode::SUCCESS
}

/// The replay of a violation as a scenario: the checker's machine, one
/// line per element of `lines`, one thread per cache that acts.
fn replay_scenario(
    config: &sim_core::checker::CheckConfig,
    [caches, lines, values, buffer]: [u32; 4],
    v: &sim_core::checker::Violation,
) -> String {
    let protocol = config.protocol;
    let m = config.machine();
    let l = &m.latency;
    let name = protocol.name();
    let mut text = format!(
        "# Replays the shortest path to a protocol violation found by\n\
         # `bounce check-protocol --protocol {name} --caches {caches} --lines {lines} \
         --values {values} --buffer {buffer} --cores-per-l3 {} --l3-shared-lines {} \
         --directory {}`.\n#\n",
        config.cores_per_l3,
        config.l3_shared_lines.name(),
        config.directory.name()
    );
    for line in v.to_string().lines() {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(&format!(
        "#\n# Each access is issued where it took effect in the path, \
         {} cycles apart, so that\n# each finds its line free (see the scripts). \
         Run with `bounce run --check`.\n\n\
         schema = 1\nname = \"check-protocol-{name}\"\n\
         description = \"Replay of a {} violation\"\nseed = 1\n\n\
         [machine]\nname = \"{}\"\nclock_mhz = {}\nsockets = {}\n\
         nodes_per_socket = {}\nl3_per_node = {}\ncores_per_l3 = {}\n\
         threads_per_core = {}\nline_size_bytes = {}\nprotocol = \"{name}\"\n\
         lookup = \"{}\"\nadjacent_line_prefetch = {}\nstore_buffer_entries = {}\n\
         l3_shared_lines = \"{}\"\ndirectory = \"{}\"\n\n\
         [machine.latency]\nl1_hit_cycles = {}\nlocked_op_cycles = {}\n\
         smt_transfer_cycles = {}\nl3_transfer_cycles = {}\nhop_in_node_cycles = {}\n\
         hop_between_nodes_cycles = {}\nhop_between_sockets_cycles = {}\n\
         dram_cycles = {}\nl3_hit_cycles = {}\nhome_occupancy_cycles = {}\n\n\
         [run]\niterations = 1\n\n\
         [structs.line]\nalign = 64\nfields = [\n  {{ name = \"v\", type = \"unsigned long\" }},\n]\n\n\
         [instances.lines]\nstruct = \"line\"\nkind = \"global\"\ncount = {lines}\nnode = 0\n\n\
         [scripts]\n",
        sim_core::checker::REPLAY_STEP_CYCLES,
        v.invariant,
        m.name,
        m.clock_mhz,
        m.sockets,
        m.nodes_per_socket,
        m.l3_per_node,
        m.cores_per_l3,
        m.threads_per_core,
        m.line_size_bytes,
        m.lookup.name(),
        m.adjacent_line_prefetch,
        m.store_buffer_entries,
        m.l3_shared_lines.name(),
        m.directory.name(),
        l.l1_hit_cycles,
        l.locked_op_cycles,
        l.smt_transfer_cycles,
        l.l3_transfer_cycles,
        l.hop_in_node_cycles,
        l.hop_between_nodes_cycles,
        l.hop_between_sockets_cycles,
        l.dram_cycles,
        l.l3_hit_cycles,
        l.home_occupancy_cycles,
    ));
    let scripts = v.replay_scripts();
    for (cpu, script) in &scripts {
        text.push_str(&format!("cache{cpu} = \"\"\"\n{script}\"\"\"\n"));
    }
    for (cpu, _) in &scripts {
        text.push_str(&format!(
            "\n[[threads]]\nname = \"cache{cpu}\"\ncpus = \"{cpu}\"\nscript = \"cache{cpu}\"\n"
        ));
    }
    text
}
