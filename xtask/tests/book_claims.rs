//! The book's prose says what its generated tables show. Each claim below
//! quotes a phrase of a chapter and checks what the phrase says against the
//! committed generated table beside it (which `book_fresh.rs` keeps equal to
//! what the scenarios give today). A change of the model that moves a figure
//! past what the words say fails here, naming the chapter and the phrase to
//! rewrite; a rewritten phrase fails here too, until its claim is brought to
//! the new words. The bounds are the words' own ("about a third", "more
//! than half"), not the figures' current values.

use std::path::{Path, PathBuf};

fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .join("book/src")
}

/// A text with every run of whitespace made one space, so that a phrase
/// matches across the chapter's line breaks.
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of a chapter (`ch08-locks.md`) or a generated file
/// (`generated/locks/fairness.md`), under `book/src/`.
fn read(relative: &str) -> String {
    let path = book_src().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A number as the generated tables print it: `14.61k`, `6.775M`, `+10 %`,
/// `1,234`, in backticks or not.
fn number(cell: &str) -> f64 {
    let text: String = cell
        .chars()
        .filter(|c| !matches!(c, '`' | '%' | '+' | ',' | ' '))
        .collect();
    let (digits, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('M') => (&text[..text.len() - 1], 1e6),
        Some('G') => (&text[..text.len() - 1], 1e9),
        _ => (text.as_str(), 1.0),
    };
    digits
        .parse::<f64>()
        .unwrap_or_else(|e| panic!("`{cell}` is not a number: {e}"))
        * scale
}

/// The first Markdown table of a generated file: its column names (without
/// backticks) and its rows' cells (as printed).
struct Table {
    file: String,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn load(generated: &str) -> Table {
        let text = read(generated);
        let cells = |line: &str| -> Vec<String> {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        };
        let mut lines = text.lines().filter(|l| l.starts_with('|'));
        let columns = cells(
            lines
                .next()
                .unwrap_or_else(|| panic!("{generated}: no table")),
        )
        .into_iter()
        .map(|c| c.replace('`', ""))
        .collect();
        let rows = lines.skip(1).map(cells).collect();
        Table {
            file: generated.to_string(),
            columns,
            rows,
        }
    }

    fn column(&self, name: &str) -> usize {
        self.columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("{}: no column `{name}` in {:?}", self.file, self.columns))
    }

    /// The rows whose cells in the named columns read as given (backticks
    /// ignored).
    fn rows_where(&self, keys: &[(&str, &str)]) -> Vec<&Vec<String>> {
        let keys: Vec<(usize, &str)> = keys.iter().map(|(c, v)| (self.column(c), *v)).collect();
        self.rows
            .iter()
            .filter(|row| keys.iter().all(|(i, v)| row[*i].replace('`', "") == *v))
            .collect()
    }

    /// The one row matching `keys`, its cell in `column`, as printed.
    fn cell(&self, keys: &[(&str, &str)], column: &str) -> String {
        let rows = self.rows_where(keys);
        assert_eq!(
            rows.len(),
            1,
            "{}: {} rows match {keys:?}",
            self.file,
            rows.len()
        );
        rows[0][self.column(column)].clone()
    }

    /// The one row matching `keys`, its number in `column`.
    fn get(&self, keys: &[(&str, &str)], column: &str) -> f64 {
        number(&self.cell(keys, column))
    }
}

/// The claims of a chapter: each a phrase the chapter must contain and
/// whether what it says holds; all failures reported together.
struct Claims {
    chapter: &'static str,
    text: String,
    failures: Vec<String>,
}

impl Claims {
    fn of(chapter: &'static str) -> Claims {
        Claims {
            chapter,
            text: normalized(&read(chapter)),
            failures: Vec::new(),
        }
    }

    /// `phrase` must be in the chapter, and `holds` (what the table shows,
    /// described by `shows`) must be true.
    fn says(&mut self, phrase: &str, holds: bool, shows: String) {
        if !self.text.contains(&normalized(phrase)) {
            self.failures.push(format!(
                "the phrase \"{phrase}\" is no longer in the chapter: bring its claim (xtask/tests/book_claims.rs) to the new words"
            ));
        } else if !holds {
            self.failures.push(format!(
                "\"{phrase}\" no longer holds: the table shows {shows}"
            ));
        }
    }

    fn done(self) {
        assert!(
            self.failures.is_empty(),
            "book/src/{}: its prose and its generated figures disagree; rewrite the prose (or the claim):\n  {}",
            self.chapter,
            self.failures.join("\n  ")
        );
    }
}

fn within(value: f64, low: f64, high: f64) -> bool {
    (low..=high).contains(&value)
}

#[test]
fn chapter_1_false_sharing() {
    let t = Table::load("generated/false-sharing/summary.md");
    let packed = [("variant", "packed")];
    let padded = [("variant", "padded")];
    let hitm = t.get(&packed, "HITM per increment");
    let cross = t.get(&packed, "cross-socket misses per increment");
    let ratio = t.get(&packed, "cycles per increment") / t.get(&padded, "cycles per increment");
    let mut c = Claims::of("ch01-cache-lines.md");
    c.says(
        "packed, about every other increment misses",
        within(hitm, 0.4, 0.6),
        format!("{hitm} HITM per increment"),
    );
    c.says(
        "about a quarter of those transfers cross the socket link",
        within(cross / hitm, 0.18, 0.32),
        format!("{cross} of {hitm} crossing"),
    );
    c.says(
        "fourteen times what it costs padded",
        within(ratio, 13.5, 14.5),
        format!("{ratio:.2} times"),
    );
    c.says(
        "every increment hits in the core's own cache",
        t.get(&padded, "HITM per increment") == 0.0,
        "HITMs padded".into(),
    );
    c.done();
    let mut c = Claims::of("ch04-false-sharing.md");
    c.says(
        "the field draws a miss on about every second store",
        within(hitm, 0.4, 0.6),
        format!("{hitm} HITM per increment"),
    );
    c.done();
}

#[test]
fn chapter_5_contended_atomics() {
    let t = Table::load("generated/contended-scaling/summary.md");
    let thr = |cpus: &str| t.get(&[("CPUs", cpus)], "increments per second (all CPUs)");
    let cross = |cpus: &str| t.get(&[("CPUs", cpus)], "cross-socket misses per increment");
    let one_socket: Vec<f64> = t
        .rows_where(&[("sockets", "1")])
        .iter()
        .filter(|r| r[0] != "1")
        .map(|r| number(&r[t.column("increments per second (all CPUs)")]))
        .collect();
    let two_sockets: Vec<f64> = t
        .rows_where(&[("sockets", "2")])
        .iter()
        .map(|r| number(&r[t.column("increments per second (all CPUs)")]))
        .collect();
    let mut c = Claims::of("ch05-contended-atomics.md");
    c.says(
        "stays in a narrow band (about 39 to 54 M increments a second) while they are on one socket",
        one_socket.iter().all(|&v| within(v, 38.5e6, 54.5e6)),
        format!("{one_socket:?}"),
    );
    c.says(
        "about one increment in fifty at 48 CPUs, one in sixty-five at 80",
        within(cross("48"), 1.0 / 60.0, 1.0 / 42.0) && within(cross("80"), 1.0 / 75.0, 1.0 / 57.0),
        format!("{} and {}", cross("48"), cross("80")),
    );
    c.says(
        "drops at 48 (45 M against 53 M at 40)",
        (thr("48") / 1e6).round() == 45.0 && (thr("40") / 1e6).round() == 53.0,
        format!("{} and {}", thr("48"), thr("40")),
    );
    c.says(
        "moves within about 45 to 58 M increments a second",
        two_sockets.iter().all(|&v| within(v, 44.5e6, 58.5e6)),
        format!("{two_sockets:?}"),
    );
    let h = Table::load("generated/home-node/summary.md");
    let cost = |v: &str| h.get(&[("variant", v)], "cycles per increment");
    let crossing = |v: &str| h.get(&[("variant", v)], "cross-socket misses per increment");
    c.says(
        "(2611 against 1498 cycles)",
        cost("home-far").round() == 2611.0 && cost("home-near").round() == 1498.0,
        format!("{} and {}", cost("home-far"), cost("home-near")),
    );
    c.says(
        "within half a percent (658.8 and 661.7 cycles)",
        h.cell(&[("variant", "intel-far")], "cycles per increment") == "658.8"
            && h.cell(&[("variant", "intel-near")], "cycles per increment") == "661.7",
        format!("{} and {}", cost("intel-far"), cost("intel-near")),
    );
    c.says(
        "no miss crosses",
        crossing("intel-far") == 0.0
            && crossing("intel-near") == 0.0
            && crossing("home-near") == 0.0,
        "crossing misses on Intel or with the near home".into(),
    );
    c.done();
}

#[test]
fn chapter_7_batching() {
    let t = Table::load("generated/batching/summary.md");
    let get = |variant: &str, batch: &str, column: &str| {
        t.get(&[("variant", variant), ("batch", batch)], column)
    };
    let batches = ["1", "4", "16", "64"];
    let atomic: Vec<f64> = batches
        .iter()
        .map(|b| get("atomic", b, "cycles per add"))
        .collect();
    let (low, high) = atomic
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    let percpu: Vec<f64> = batches
        .iter()
        .map(|b| get("percpu", b, "cycles per add"))
        .collect();
    let mut c = Claims::of("ch07-batching.md");
    c.says(
        "The atomic rows differ only within about 1.5 %",
        high / low <= 1.02,
        format!("{atomic:?}"),
    );
    let crossing: Vec<f64> = batches
        .iter()
        .map(|b| {
            get("atomic", b, "cross-socket misses per add") / get("atomic", b, "misses per add")
        })
        .collect();
    c.says(
        "about three in ten of them across the socket link",
        crossing.iter().all(|&s| within(s, 0.25, 0.35)),
        format!("{crossing:?} of the misses crossing"),
    );
    c.says(
        "worse than the atomic",
        percpu[0] > atomic[0],
        format!("{} against {}", percpu[0], atomic[0]),
    );
    c.says(
        "The cost per add falls towards the 300 cycles of other work",
        percpu.windows(2).all(|w| w[1] < w[0]) && percpu[3] > 300.0,
        format!("{percpu:?}"),
    );
    let bound_holds = batches.iter().all(|b| {
        let batch: f64 = b.parse().unwrap();
        get("percpu", b, "largest shortfall of a read (adds)") == (batch - 1.0) * 8.0
            && get("atomic", b, "largest shortfall of a read (adds)") == 0.0
    });
    c.says(
        "it is the bound, `(batch - 1) × 8`",
        bound_holds,
        "another bound".into(),
    );
    c.done();
}

#[test]
fn chapter_8_lock_scaling() {
    let t = Table::load("generated/locks/throughput.md");
    let at = |cpus: &str, lock: &str| t.get(&[("CPUs", cpus)], lock);
    let flat = ["4", "8", "16", "32"];
    let mut c = Claims::of("ch08-locks.md");
    let order = ["mcs", "qspinlock", "ticket", "ttas", "tas"];
    c.says(
        "The model gives that order",
        order.windows(2).all(|w| at("48", w[0]) > at("48", w[1])),
        format!("at 48 CPUs {:?}", order.map(|l| (l, at("48", l)))),
    );
    let spread = |lock: &str| {
        let v: Vec<f64> = flat.iter().map(|n| at(n, lock)).collect();
        v.iter().cloned().fold(0.0, f64::max) / v.iter().cloned().fold(f64::MAX, f64::min)
    };
    c.says(
        "MCS and qspinlock keep their total throughput about flat from 4 to 32",
        spread("mcs") <= 1.05 && spread("qspinlock") <= 1.05,
        format!("max / min {} and {}", spread("mcs"), spread("qspinlock")),
    );
    let below: Vec<f64> = flat
        .iter()
        .map(|n| at(n, "qspinlock") / at(n, "mcs"))
        .collect();
    c.says(
        "qspinlock runs about a third below MCS (3.5 against 5.3 M",
        below.iter().all(|&r| within(r, 0.6, 0.72)),
        format!("qspinlock / MCS {below:?}"),
    );
    c.says(
        "qspinlock gets through fewer critical sections than TAS (4.7 against 6.8 M a second), and only about a third more than with 4",
        at("2", "qspinlock") < at("2", "tas")
            && (at("2", "qspinlock") / 1e5).round() == 47.0
            && (at("2", "tas") / 1e5).round() == 68.0
            && within(at("2", "qspinlock") / at("4", "qspinlock"), 1.25, 1.42),
        format!(
            "qspinlock {} at 2, {} at 4; TAS {} at 2",
            at("2", "qspinlock"),
            at("4", "qspinlock"),
            at("2", "tas")
        ),
    );
    c.says(
        "it gets through about two and a half times as many as TAS",
        within(at("2", "mcs") / at("2", "tas"), 2.25, 2.75),
        format!("{} times", at("2", "mcs") / at("2", "tas")),
    );
    let same_to_32 = ["1", "2", "4", "8", "16", "32"]
        .iter()
        .all(|n| at(n, "tas") == at(n, "tas-relax"));
    let at_48 = at("48", "tas-relax") / at("48", "tas");
    c.says(
        "up to 32 CPUs TAS with a PAUSE gets through exactly as many critical sections as without one",
        same_to_32,
        "tas and tas-relax differ below 48 CPUs".into(),
    );
    c.says(
        "and at 48 about 2 % more",
        within(at_48, 1.01, 1.03),
        format!("{at_48} times"),
    );
    let ttas = at("48", "ttas") / at("48", "tas");
    let ticket = at("48", "ticket") / at("48", "tas");
    c.says(
        "(about 1.5 and 2 times its throughput)",
        within(ttas, 1.35, 1.65) && within(ticket, 1.8, 2.25),
        format!("{ttas} and {ticket} times"),
    );
    let mcs = at("48", "mcs") / at("32", "mcs");
    let qspinlock = at("48", "qspinlock") / at("32", "qspinlock");
    c.says(
        "MCS loses about an eighth and qspinlock a few percent against 32 CPUs",
        within(mcs, 0.84, 0.9) && within(qspinlock, 0.93, 0.99),
        format!("48 against 32: {mcs} and {qspinlock}"),
    );
    let traffic = Table::load("generated/locks/traffic.md");
    let misses = traffic.get(&[("lock", "tas")], "misses per critical section");
    let crossing = traffic.get(
        &[("lock", "tas")],
        "cross-socket misses per critical section",
    );
    c.says(
        "even TAS, which moves its line about fifty times per critical section, crosses the link about twice",
        within(misses, 45.0, 55.0) && within(crossing, 1.5, 2.5),
        format!("{misses} misses, {crossing} crossing"),
    );
    c.done();
}

#[test]
fn chapter_8_lock_fairness_and_arbitration() {
    let t = Table::load("generated/locks/fairness.md");
    let get = |lock: &str, column: &str| t.get(&[("lock", lock)], column);
    let luck = |lock: &str| get(lock, "most by one CPU") / get(lock, "fewest by one CPU");
    let mut c = Claims::of("ch08-locks.md");
    c.says(
        "the luckiest CPU gets through about a fifth (TAS) to two fifths (TTAS) more often than the unluckiest",
        within(luck("tas"), 1.15, 1.28) && within(luck("ttas"), 1.32, 1.48),
        format!("{} and {}", luck("tas"), luck("ttas")),
    );
    let longest = |lock: &str| get(lock, "longest iteration (cycles)");
    c.says(
        "the longest single wait is several times the ticket lock's",
        longest("tas") >= 3.0 * longest("ticket") && longest("ttas") >= 3.0 * longest("ticket"),
        format!(
            "{}, {} against {}",
            longest("tas"),
            longest("ttas"),
            longest("ticket")
        ),
    );
    c.says(
        "their spread is small",
        ["ticket", "mcs", "qspinlock"]
            .iter()
            .all(|l| get(l, "spread (max - min) / mean") <= 2.0),
        "a spread above 2 %".into(),
    );
    let a = Table::load("generated/locks/arbitration.md");
    let change = |lock: &str| a.get(&[("lock", lock)], "change in critical sections");
    c.says(
        "TTAS more than half again as many critical sections",
        change("ttas") >= 50.0,
        format!("{} %", change("ttas")),
    );
    c.says(
        "and the ticket lock about a third",
        within(change("qspinlock"), 25.0, 40.0) && within(change("ticket"), 25.0, 40.0),
        format!("{} % and {} %", change("qspinlock"), change("ticket")),
    );
    c.says(
        "TAS gains least of these (about a tenth)",
        within(change("tas"), 5.0, 15.0)
            && ["ttas", "ticket", "qspinlock"]
                .iter()
                .all(|l| change(l) > change("tas")),
        format!("{} %", change("tas")),
    );
    let crossing = |lock: &str| -> (f64, f64) {
        let row = a.rows_where(&[("lock", lock)])[0];
        let cells: Vec<f64> = a
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| *c == "cross-socket misses per critical section")
            .map(|(i, _)| number(&row[i]))
            .collect();
        (cells[0], cells[1])
    };
    c.says(
        "each crosses the socket link less often per critical section",
        ["tas", "ttas", "ticket", "qspinlock"].iter().all(|l| {
            let (before, after) = crossing(l);
            after < before
        }),
        "a lock crossing as often or more".into(),
    );
    c.says(
        "MCS does not change",
        change("mcs").abs() <= 1.0,
        format!("{} %", change("mcs")),
    );
    let column = a
        .columns
        .iter()
        .rposition(|c| c == "by socket 0 / socket 1")
        .unwrap();
    let tas_split = a.rows_where(&[("lock", "tas")])[0][column].clone();
    c.says(
        "(TAS least so, 649 to 522 critical sections)",
        tas_split == "649 / 522",
        tas_split,
    );
    c.done();
}

#[test]
fn chapter_8_sleeping_locks() {
    let t = Table::load("generated/sleeping-locks/crossover.md");
    let contenders = "contenders (8 CPUs, 8 workers)";
    let gain = |cs: &str, n: &str| {
        t.get(
            &[("critical section (ns)", cs), (contenders, n)],
            "mutex against spinlock",
        )
    };
    let mut c = Claims::of("ch08-locks.md");
    c.says(
        "the spinlock is ahead, if only just (by 1 % at 1 µs)",
        within(gain("1000", "8"), -1.5, -0.5),
        format!("{} %", gain("1000", "8")),
    );
    let sixteen: Vec<f64> = t
        .rows_where(&[(contenders, "16")])
        .iter()
        .map(|r| number(&r[t.column("mutex against spinlock")]))
        .collect();
    c.says(
        "the mutex is ahead from the shortest critical section on",
        sixteen.iter().all(|&g| g > 0.0),
        format!("{sixteen:?}"),
    );
    let h = Table::load("generated/sleeping-locks/hackbench.md");
    let ratio = |machine: &str, column: &str| {
        h.get(
            &[("machine", machine), ("variant", "refs-own-line")],
            column,
        ) / h.get(&[("machine", machine), ("variant", "base")], column)
    };
    let machines = ["icelake-sp-2s", "epyc-milan-2s"];
    let throughput: Vec<f64> = machines
        .iter()
        .map(|m| ratio(m, "messages sent and received per second"))
        .collect();
    let stall: Vec<f64> = machines
        .iter()
        .map(|m| ratio(m, "stall cycles per message"))
        .collect();
    c.says(
        "gains about 1 % of messages a second on both machines",
        throughput.iter().all(|&r| within(r, 1.003, 1.02)),
        format!("{throughput:?}"),
    );
    c.says(
        "cuts the stall cycles per message by 7 to 9 %",
        stall.iter().all(|&r| within(r, 0.905, 0.935)),
        format!("{stall:?}"),
    );
    let hitm_icx = ratio("icelake-sp-2s", "HITM per message");
    let hitm_milan = ratio("epyc-milan-2s", "HITM per message");
    c.says(
        "on the Ice Lake the HITMs per message fall by a tenth; on the Milan they stay",
        within(hitm_icx, 0.87, 0.93) && within(hitm_milan, 0.99, 1.01),
        format!("{hitm_icx} and {hitm_milan}"),
    );
    c.done();
}

#[test]
fn chapter_9_case_targets() {
    let index = read("generated/cases/index.md");
    let mut c = Claims::of("ch09-case-studies.md");
    c.says(
        "are met by four rows of eleven",
        index.contains("4 of 11 target(s) met"),
        "another count for memcg-stock-lock".into(),
    );
    c.says(
        "all seven, the 72-client and Ice Lake runs included, land within their 15 points",
        index.contains("7 of 7 target(s) met"),
        "another count for sctp-memcg".into(),
    );
    c.done();
}

#[test]
fn chapter_10_tutorial_sweep() {
    // The report's table with a row per case: `cpus packed %change split`.
    let report = read("generated/tutorial/report.txt");
    let rows: Vec<(u32, f64, f64)> = report
        .lines()
        .skip_while(|l| !l.starts_with("cpus  packed"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (
                cells[0].parse().unwrap(),
                number(cells[1]),
                number(cells[3]),
            )
        })
        .collect();
    assert!(rows.len() >= 5, "the tutorial's sweep table: {rows:?}");
    let ratios: Vec<f64> = rows
        .iter()
        .filter(|r| r.0 >= 2)
        .map(|r| r.2 / r.1)
        .collect();
    let row = |cpus: u32| *rows.iter().find(|r| r.0 == cpus).unwrap();
    let mut c = Claims::of("ch10-your-own-scenario.md");
    c.says(
        "it gets through about 1.25 to 1.7 times as many requests as packed",
        ratios.iter().all(|&r| within(r, 1.22, 1.72)),
        format!("{ratios:?}"),
    );
    c.says(
        "Both layouts lose throughput at 12 CPUs",
        row(12).1 < row(8).1 && row(12).2 < row(8).2,
        format!("{:?} then {:?}", row(8), row(12)),
    );
    c.done();
}

#[test]
fn chapter_12_litmus() {
    let sb = Table::load("generated/litmus/litmus-sb.md");
    let mp = Table::load("generated/litmus/litmus-mp.md");
    let sb_get = |v: &str, c: &str| sb.get(&[("variant", v)], c);
    let mp_get = |v: &str, c: &str| mp.get(&[("variant", v)], c);
    let mut c = Claims::of("ch12-memory-ordering.md");
    c.says(
        "Without a fence both loads read 0 in a good share of the rounds",
        sb_get("plain", "r1 = 0, r2 = 0") >= 0.2 * sb_get("plain", "rounds"),
        format!("{} rounds", sb_get("plain", "r1 = 0, r2 = 0")),
    );
    c.says(
        "the outcome r1 = r2 = 0 never appears",
        sb_get("fence", "r1 = 0, r2 = 0") == 0.0 && sb_get("locked", "r1 = 0, r2 = 0") == 0.0,
        "r1 = r2 = 0 behind a barrier".into(),
    );
    c.says(
        "In order, the forbidden outcome never appears, with no fence, while the three others do",
        mp_get("in-order", "r1 = 1, r2 = 0") == 0.0
            && ["r1 = 0, r2 = 0", "r1 = 0, r2 = 1", "r1 = 1, r2 = 1"]
                .iter()
                .all(|o| mp_get("in-order", o) > 0.0),
        "another histogram".into(),
    );
    c.says(
        "r1 = 1, r2 = 0 now appears in many rounds",
        mp_get("reads-swapped", "r1 = 1, r2 = 0") >= 0.1 * mp_get("reads-swapped", "rounds"),
        format!("{} rounds", mp_get("reads-swapped", "r1 = 1, r2 = 0")),
    );
    c.done();
}

#[test]
fn chapter_13_counting() {
    let t = Table::load("generated/counting/costs.md");
    let get = |v: &str, c: &str| t.get(&[("variant", v)], c);
    let mut c = Claims::of("ch13-counting.md");
    let read_to_add = get("atomic", "cycles per read") / get("atomic", "cycles per add");
    c.says(
        "so the exact read costs about as much as an add",
        within(read_to_add, 0.9, 1.25),
        format!("{read_to_add} times"),
    );
    c.says(
        "The per-CPU counter cuts the adders' cost by more than half",
        get("percpu-read", "cycles per add") < 0.5 * get("atomic", "cycles per add"),
        format!(
            "{} against {}",
            get("percpu-read", "cycles per add"),
            get("atomic", "cycles per add")
        ),
    );
    c.says(
        "The exact sum costs the adders more",
        get("percpu-sum", "cycles per add") > get("percpu-read", "cycles per add"),
        "the sum's adders no dearer".into(),
    );
    c.says(
        "a read now costs many thousands of cycles",
        get("percpu-sum", "cycles per read") >= 5000.0,
        format!("{}", get("percpu-sum", "cycles per read")),
    );
    c.says(
        "248 units here",
        get("percpu-read", "largest error of a read (units)") == 248.0,
        "another bound".into(),
    );
    c.done();
}

#[test]
fn chapter_14_read_mostly() {
    let t = Table::load("generated/read-mostly/costs.md");
    let machines = ["icelake-sp-2s", "epyc-milan-2s"];
    let get = |m: &str, v: &str| t.get(&[("machine", m), ("variant", v)], "cycles per read");
    let others = ["percpu-rwsem", "seqlock", "rcu"];
    let mut c = Claims::of("ch14-read-mostly.md");
    c.says(
        "The reader-writer lock is the expensive one by far, and more so on the Milan",
        machines
            .iter()
            .all(|m| others.iter().all(|v| get(m, "rwlock") > 10.0 * get(m, v)))
            && get("epyc-milan-2s", "rwlock") > get("icelake-sp-2s", "rwlock"),
        "another ranking".into(),
    );
    c.says(
        "A read costs the seqlock and RCU readers a few tens of cycles, and the per-CPU count about a hundred",
        machines.iter().all(|m| {
            within(get(m, "seqlock"), 10.0, 60.0)
                && within(get(m, "rcu"), 10.0, 60.0)
                && within(get(m, "percpu-rwsem"), 70.0, 130.0)
        }),
        "other costs".into(),
    );
    c.says(
        "and they cost about the same on both machines",
        others
            .iter()
            .all(|v| within(get("epyc-milan-2s", v) / get("icelake-sp-2s", v), 0.9, 1.1)),
        "machines a tenth or more apart".into(),
    );
    c.done();
}

#[test]
fn a_claim_that_no_longer_holds_is_reported() {
    let mut c = Claims {
        chapter: "test.md",
        text: normalized("TAS gains\nleast"),
        failures: Vec::new(),
    };
    c.says("TAS gains least", false, "TAS gaining most".into());
    c.says("MCS gains most", true, String::new());
    assert_eq!(c.failures.len(), 2, "{:?}", c.failures);
    assert!(c.failures[0].contains("no longer holds"));
    assert!(c.failures[1].contains("no longer in the chapter"));
    assert_eq!(number("14.61k"), 14610.0);
    assert_eq!(number("+10 %"), 10.0);
    assert_eq!(number("`6.775M`"), 6_775_000.0);
}
