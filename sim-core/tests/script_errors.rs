//! Script mistakes: compile errors with their exact messages, and run-time
//! failures that stop the run as errors naming the CPU and the position.

use models::layout::{InstanceSpec, StructSpec};
use sim_core::cpu::LinuxCpu;
use sim_core::engine::{StopRule, MAX_CALL_DEPTH};
use sim_core::error::{Budget, CpuWhere};
use sim_core::script::ast::{ExprKind, SourcePos, StmtKind};
use sim_core::script::compile::{compile, ScriptSource};
use sim_core::script::parse::parse_block;
use sim_core::topology::{Lookup, Protocol};
use sim_core::{Cycle, SimError};
use testkit::{array, field, global, icelake, per_cpu, small_machine, strukt, Setup};

fn structs() -> Vec<StructSpec> {
    vec![strukt(
        "ctr",
        vec![field("value", "long"), array("slots", "long", 4)],
    )]
}

fn instances() -> Vec<InstanceSpec> {
    vec![global("counter", "ctr", 0), per_cpu("stats", "ctr")]
}

fn setup<'a>(script: &'a str) -> Setup<'a> {
    Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(structs())
        .instances(instances())
        .script("s", script)
        .thread(6, "s")
}

fn pos(line: u32, column: u32) -> SourcePos {
    SourcePos { line, column }
}

// ---------------------------------------------------------------------------
// Compile errors
// ---------------------------------------------------------------------------

/// The compile error of `script`, as displayed.
fn compile_error(script: &str) -> String {
    match setup(script).try_build() {
        Ok(_) => panic!("`{script}` compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unknown_names_suggest_the_closest() {
    assert_eq!(
        compile_error("cuonter.value = 1"),
        "scripts.s line 1, column 1: unknown instance `cuonter`; did you mean `counter`? \
         (valid: counter, stats)"
    );
    // The position is the field's, after `counter.`.
    assert_eq!(
        compile_error("let v = counter.valeu"),
        "scripts.s line 1, column 17: struct `ctr` (of instance `counter`) has no field \
         `valeu`; did you mean `value`? (valid: value, slots)"
    );
    assert_eq!(
        compile_error("let total = 0\ntotl = 1"),
        "scripts.s line 2, column 1: `totl` is not declared; declare it with \
         `let totl = ...`; did you mean `total`?"
    );
    assert_eq!(
        compile_error("let total = 0\nlet x = totl + 1"),
        "scripts.s line 2, column 9: unknown name `totl`: not a local, a procedure \
         parameter or a scenario parameter; did you mean `total`? (valid: a local in scope \
         here: total; a scenario parameter: (none))"
    );
    assert_eq!(
        compile_error("let x = counter"),
        "scripts.s line 1, column 9: `counter` is an instance: name a field, as \
         `counter.field`"
    );
    let e = setup("let r = rnadom(4)")
        .procedure("helper", vec![], "return 1")
        .try_build()
        .unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("random"));
    assert_eq!(
        e.to_string(),
        "scripts.s line 1, column 9: unknown procedure or builtin `rnadom`; did you mean \
         `random`? (valid: cpu, core, node, socket, tid, nthreads, ncpus, nnodes, random, \
         uniform, exp, iteration, now, min, max, abs, part, task, task_running, need_resched, \
         yield, sleep, futex_wait, futex_wake, cost, helper, fetch_add, fetch_sub, fetch_or, fetch_and, \
         xchg, cmpxchg)"
    );
    // Nothing close: no suggestion.
    let e = setup("zzz.value = 1").try_build().unwrap_err();
    assert_eq!(e.suggestion, None);
    assert_eq!(e.valid.as_deref(), Some("counter, stats"));
    assert_eq!(
        e.to_string(),
        "scripts.s line 1, column 1: unknown instance `zzz` (valid: counter, stats)"
    );
}

#[test]
fn arity_mistakes_are_reported() {
    // The parser already rejects an atomic with the wrong number of values...
    let e = parse_block("fetch_add(counter.value)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1, column 1: `fetch_add` takes a place and 1 value, found 1 argument"
    );
    let e = parse_block("let o = cmpxchg(counter.value, 1)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1, column 9: `cmpxchg` takes a place and 2 values, found 2 arguments"
    );
    // ... and the compiler checks a tree built by other means.
    let mut body = parse_block("\n  cmpxchg(counter.value, 1, 2)").unwrap();
    let StmtKind::Expr(expr) = &mut body[0].kind else {
        panic!("an expression statement");
    };
    let ExprKind::Atomic(_, _, operands) = &mut expr.kind else {
        panic!("an atomic");
    };
    operands.pop();
    let s = setup("");
    let config = s.build();
    let e = compile(
        &config.memory,
        &[],
        &[],
        &[ScriptSource {
            name: "hand".into(),
            body,
        }],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "scripts.hand line 2, column 3: `cmpxchg` takes a place and 2 value(s), found 1"
    );
    // Builtins and procedures count their arguments too.
    assert_eq!(
        compile_error("let r = random()"),
        "scripts.s line 1, column 9: `random` takes 1 argument(s), found 0"
    );
    let e = setup("let v = twice(1, 2)")
        .procedure("twice", vec!["x"], "return x * 2")
        .try_build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "scripts.s line 1, column 9: procedure `twice` takes 1 argument(s), found 2"
    );
}

#[test]
fn control_flow_mistakes_are_reported() {
    assert_eq!(
        compile_error("work 1\nbreak"),
        "scripts.s line 2, column 1: `break` outside a loop"
    );
    assert_eq!(
        compile_error("if 1 {\n  continue\n}"),
        "scripts.s line 2, column 3: `continue` outside a loop"
    );
    assert_eq!(
        compile_error("if 1 {\n  return 3\n}"),
        "scripts.s line 2, column 3: a script's `return` ends the iteration and takes no value"
    );
    // Inside a loop, and a procedure's return with a value, are fine.
    setup("while 1 {\n  if 1 { break }\n}\nreturn")
        .procedure("p", vec![], "return 3")
        .build();
    let e = setup("let v = p()")
        .procedure("p", vec![], "break")
        .try_build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "procedures.p line 1, column 1: `break` outside a loop"
    );
}

#[test]
fn field_shape_mistakes_are_reported() {
    assert_eq!(
        compile_error("counter.value[0] = 1"),
        "scripts.s line 1, column 1: `value` is not an array and takes no index"
    );
    assert_eq!(
        compile_error("let v = counter.slots"),
        "scripts.s line 1, column 9: `slots` is an array of 4; index it, as `counter.slots[i]`"
    );
    setup("counter.slots[3] = counter.value\nstats[2].slots[0] = 1").build();
}

/// Pointers are opaque (issue 19, defect 7): `*` never takes a value that
/// is surely an integer, and no arithmetic takes a pointer. A number forged
/// into a pointer reached a field that does not exist, and its accesses
/// vanished from the attribution.
#[test]
fn pointers_are_opaque() {
    const POINTER_USES: &str = "(valid: compare, store, pass, return or dereference a pointer \
        (`*p`); `part(p, offset, size)` points at bytes inside its field)";
    const MADE_BY: &str = "(valid: a pointer made by `&inst.field` (or `part` of one), passed, \
        stored or loaded unchanged)";
    let cases: Vec<(&str, String)> = vec![
        (
            "let p = 17600982137438208\nfetch_add(*p, 1)",
            format!(
                "scripts.s line 2, column 11: `*` takes a pointer, and this value is always an \
                 integer (a number, arithmetic, a comparison or a builtin's value) {MADE_BY}"
            ),
        ),
        (
            "*12345 = 1",
            format!(
                "scripts.s line 1, column 1: `*` takes a pointer, and this value is always an \
                 integer (a number, arithmetic, a comparison or a builtin's value) {MADE_BY}"
            ),
        ),
        (
            "let p = &counter.value * 3\n*p = 1",
            format!(
                "scripts.s line 1, column 9: the left operand of `*` holds a pointer (made by `&` or `part`), and pointers are opaque: no number is made of one {POINTER_USES}"
            ),
        ),
        (
            "let p = &counter.value\np = p + 8\n*p = 1",
            format!(
                "scripts.s line 2, column 5: the left operand of `+` holds a pointer (made by `&` or `part`), and pointers are opaque: no number is made of one {POINTER_USES}"
            ),
        ),
        (
            "let x = -&counter.value",
            format!(
                "scripts.s line 1, column 10: the operand of `-` holds a pointer (made by `&` or `part`), and pointers are opaque: no number is made of one {POINTER_USES}"
            ),
        ),
        (
            "counter.slots[&counter.value] = 1",
            format!(
                "scripts.s line 1, column 15: the field index holds a pointer (made by `&` or `part`), and pointers are opaque: no number is made of one {POINTER_USES}"
            ),
        ),
        (
            "fetch_add(counter.value, &counter.value)",
            format!(
                "scripts.s line 1, column 26: the operand of `fetch_add` holds a pointer (made by `&` or `part`), and pointers are opaque: no number is made of one {POINTER_USES}"
            ),
        ),
        (
            "work &counter.value",
            format!(
                "scripts.s line 1, column 6: the count of `work` holds a pointer (made by `&` or `part`), and pointers are opaque: no number is made of one {POINTER_USES}"
            ),
        ),
        (
            "let x = part(7, 0, 1)",
            format!(
                "scripts.s line 1, column 14: `part` takes a pointer first, and this value is \
                 always an integer {MADE_BY}"
            ),
        ),
    ];
    for (script, expected) in cases {
        assert_eq!(compile_error(script), expected, "{script}");
    }
    // A parameter is what its callers pass: only integers here, so `*p`
    // is refused inside the procedure.
    let e = setup("poke(12345)")
        .procedure("poke", vec!["p"], "*p = 1")
        .try_build()
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "procedures.poke line 1, column 1: `*` takes a pointer, and this value is always an \
             integer (a number, arithmetic, a comparison or a builtin's value) {MADE_BY}"
        )
    );
    // What a pointer is good for compiles: comparisons, null, passing,
    // storing into a field and loading it back, `part`, `&*p`.
    setup(
        "let p = &counter.value\nif p != 0 && p == &*p { poke(p) }\ncounter.slots[0] = p\n\
         let q = counter.slots[0]\n*q = 2\nlet b = part(p, 0, 1)\n*b = 1\nlet z = 0\nz = p\n*z = 3",
    )
    .procedure("poke", vec!["p"], "*p = 1")
    .build();
}

// ---------------------------------------------------------------------------
// Run-time errors
// ---------------------------------------------------------------------------

fn script_error(err: &SimError) -> (u32, Cycle, &str, SourcePos, &str) {
    match err {
        SimError::Script {
            cpu,
            cycle,
            origin,
            pos,
            message,
            ..
        } => (cpu.get(), *cycle, origin, *pos, message),
        other => panic!("expected a script error, got {other}"),
    }
}

#[test]
fn division_by_zero_is_an_error() {
    let err = setup("work 3\nlet z = 0\nlet q = 5 / z").run_err();
    assert_eq!(
        script_error(&err),
        (
            6,
            Cycle::new(3),
            "scripts.s",
            pos(3, 11),
            "division by zero"
        )
    );
    assert_eq!(
        err.to_string(),
        "script failed on CPU 6 at cycle 3, scripts.s line 3, column 11: division by zero"
    );
    let err = setup("let q = half(0)")
        .procedure("half", vec!["d"], "let one = 1\nreturn one % d")
        .run_err();
    assert_eq!(
        script_error(&err),
        (
            6,
            Cycle::new(0),
            "procedures.half",
            pos(2, 12),
            "division by zero"
        )
    );
}

/// An error inside a (library) procedure also names the lines that called
/// it, down to the user's script.
#[test]
fn an_error_in_a_procedure_names_its_callers() {
    let err = setup("work 3\nlet q = outer(0)")
        .procedure("outer", vec!["d"], "work 1\nreturn half(d)")
        .procedure("half", vec!["d"], "let one = 1\nreturn one % d")
        .run_err();
    assert_eq!(
        err.to_string(),
        "script failed on CPU 6 at cycle 4, procedures.half line 2, column 12, called from \
         procedures.outer line 2, column 8, called from scripts.s line 2, column 9: division by zero"
    );
    // Recursion too deep: the innermost calls and the user's line, the
    // ones between counted.
    let err = setup("work 1\nlet q = down(5)")
        .procedure("down", vec!["n"], "return down(n + 1)")
        .run_err();
    assert_eq!(
        err.to_string(),
        "script failed on CPU 6 at cycle 1, procedures.down line 1, column 8, called from \
         procedures.down line 1, column 8, called from procedures.down line 1, column 8, called \
         from procedures.down line 1, column 8, (251 more calls), called from scripts.s line 2, \
         column 9: calls nested deeper than 256 (unbounded recursion?)"
    );
}

#[test]
fn a_distribution_without_values_is_an_error() {
    let err = setup("work 2\nwork uniform(9, 5)").run_err();
    assert_eq!(
        err.to_string(),
        "script failed on CPU 6 at cycle 2, scripts.s line 2, column 6: uniform(9, 5): the low \
         end must be <= the high end"
    );
    let err = setup("let m = 0 - 4\nwork exp(m)").run_err();
    assert_eq!(
        err.to_string(),
        "script failed on CPU 6 at cycle 0, scripts.s line 2, column 6: exp(-4): the mean must \
         be >= 0"
    );
}

#[test]
fn an_element_out_of_range_is_an_error() {
    let machine = icelake();
    assert_eq!(
        sim_core::topology::Topology::new(machine.clone())
            .unwrap()
            .cpu_count(),
        160
    );
    let err = Setup::new(machine.clone())
        .structs(structs())
        .instances(instances())
        .script("s", "let v = stats[999].value")
        .thread(3, "s")
        .run_err();
    assert_eq!(
        script_error(&err),
        (
            3,
            Cycle::new(0),
            "scripts.s",
            pos(1, 9),
            "CPU 999 out of range for `stats`: valid 0..=159"
        )
    );
    // A store, a negative element, a field index.
    let err = Setup::new(machine.clone())
        .structs(structs())
        .instances(instances())
        .script("s", "let c = 0 - 1\nstats[c].value = 1")
        .thread(159, "s")
        .run_err();
    assert_eq!(
        script_error(&err),
        (
            159,
            Cycle::new(0),
            "scripts.s",
            pos(2, 1),
            "CPU -1 out of range for `stats`: valid 0..=159"
        )
    );
    let err = Setup::new(machine)
        .structs(structs())
        .instances(instances())
        .script("s", "let i = 4\nfetch_add(counter.slots[i], 1)")
        .thread(0, "s")
        .run_err();
    assert_eq!(
        script_error(&err),
        (
            0,
            Cycle::new(0),
            "scripts.s",
            pos(2, 1),
            "index 4 out of range for field `counter.slots[..]` of 4 elements"
        )
    );
}

#[test]
fn a_failed_assert_is_an_error() {
    let err = setup("work 5\nassert 0").run_err();
    assert_eq!(
        script_error(&err),
        (6, Cycle::new(5), "scripts.s", pos(2, 1), "assertion failed")
    );
    // Only the failing CPU is named, at the iteration that fails.
    let err = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(structs())
        .instances(instances())
        .script("s", "work 10\n  assert iteration() < 3 || cpu() != 9")
        .threads([2, 9, 12], "s")
        .stop(StopRule::Iterations(5))
        .run_err();
    assert_eq!(
        script_error(&err),
        (
            9,
            Cycle::new(40),
            "scripts.s",
            pos(2, 3),
            "assertion failed"
        )
    );
}

#[test]
fn unbounded_recursion_is_an_error() {
    // Each level spends a cycle, so the failing cycle counts the levels.
    let err = setup("let v = rec(1)")
        .procedure("rec", vec!["n"], "work 1\nreturn rec(n + 1)")
        .run_err();
    assert_eq!(
        script_error(&err),
        (
            6,
            // The script's frame and 255 of the procedure's.
            Cycle::new(MAX_CALL_DEPTH as u64 - 1),
            "procedures.rec",
            pos(2, 8),
            "calls nested deeper than 256 (unbounded recursion?)"
        )
    );
}

#[test]
fn a_spinning_cpu_truncates_the_run() {
    let err = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(structs())
        .instances(instances())
        .script("done", "work 10")
        .script("spin", "let a = 1\nwhile a {\n}")
        .thread(2, "done")
        .thread(5, "spin")
        .stop(StopRule::Iterations(3))
        .max_cycles(1_000)
        .run_err();
    let SimError::Truncated {
        budget,
        limit,
        cycle,
        unfinished,
    } = &err
    else {
        panic!("expected a truncated run, got {err}");
    };
    assert_eq!((*budget, *limit), (Budget::Cycles, 1_000));
    assert!(*cycle > Cycle::new(1_000));
    assert_eq!(
        unfinished,
        &vec![CpuWhere {
            cpu: LinuxCpu::new(5),
            iterations_done: 0,
            origin: "scripts.spin".into(),
            pos: unfinished[0].pos,
        }]
    );
    assert_eq!(unfinished[0].pos.line, 2);
    let text = err.to_string();
    assert!(
        text.contains("the cycle budget (run.max_cycles = 1000)"),
        "{text}"
    );
    assert!(
        text.contains(
            "1 CPU(s) unfinished\n    CPU 5: 0 iteration(s) done, at scripts.spin line 2"
        ),
        "{text}"
    );
}

/// A `let` is scoped to its block: used after the block's `}` it is an
/// error saying so; two blocks may each declare the same name, and a name
/// may be declared again after its block ended.
#[test]
fn let_is_scoped_to_its_block() {
    assert_eq!(
        compile_error("if 1 {\n  let x = 1\n}\nlet y = x + 1"),
        "scripts.s line 4, column 9: `x` is out of scope here: its `let` (line 2) is inside a \
         block that has ended; a `let` is scoped to its block, so declare `x` before the block \
         (`let x = 0`) and assign it inside"
    );
    assert_eq!(
        compile_error("while 0 { let n = 2 }\nn = 3"),
        "scripts.s line 2, column 1: `n` is out of scope here: its `let` (line 1) is inside a \
         block that has ended; a `let` is scoped to its block, so declare `n` before the block \
         (`let n = 0`) and assign it inside"
    );
    // No shadowing: an outer local is still declared inside the block.
    assert_eq!(
        compile_error("let a = 1\nif 1 { let a = 2 }"),
        "scripts.s line 2, column 8: `a` is already declared here; assign it with `a = ...`"
    );
    let (outcome, _) = setup(
        "let t = 0\nif 1 { let a = 5\n t = t + a }\nif 1 { let a = 7\n t = t + a }\n\
         repeat 3 { let sq = t * 2\n t = sq - t }\nlet a = 100\nlet sq = a\nassert t + sq == 112",
    )
    .stop(StopRule::Iterations(1))
    .run();
    assert_eq!(outcome.cpus[0].measured_iterations, 1);
}

/// `;` ends a statement as a line break does (a C habit is harmless); a
/// `;` with no statement before it is an error, and so is one between an
/// `if` block and its `else`.
#[test]
fn a_semicolon_ends_a_statement_and_a_stray_one_is_an_error() {
    let (outcome, _) =
        setup("let a = 1; a = a + 1;\nif a == 2 { work 5; } else { work 3 };\nassert a == 2;")
            .stop(StopRule::Iterations(1))
            .run();
    assert_eq!(outcome.cpus[0].measured_iterations, 1);
    let stray = "stray `;`: a `;` ends the statement before it (as a line break does), and \
                 there is none here; remove it";
    let parse_error = |script: &str| parse_block(script).unwrap_err().to_string();
    assert_eq!(
        parse_error("work 5;;"),
        format!("line 1, column 8: {stray}")
    );
    assert_eq!(
        parse_error("work 1\n; work 5"),
        format!("line 2, column 1: {stray}")
    );
    assert_eq!(
        parse_error("if 1 { ; }"),
        format!("line 1, column 8: {stray}")
    );
    assert_eq!(
        parse_error("if 1 { work 5 };\nelse { work 3 }"),
        "line 2, column 1: `else` must follow the `}` of an `if` block; a `;` ends \
         the `if` statement before it, so remove that `;`"
    );
}

/// A field's value passed where the procedure takes `*` of its parameter
/// (a missing `&`) is an error when the scenario is built; so is an
/// integer. A field that may hold a pointer (one is stored in it) passes.
#[test]
fn a_missing_ampersand_is_caught_before_the_run() {
    let lock = |script: &str| {
        setup(script)
            .procedure("lock", vec!["p"], "let v = cmpxchg(*p, 0, 1)\nreturn v")
            .procedure("outer", vec!["q"], "work 1\nreturn lock(q)")
            .try_build()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        lock("work 1\nlet v = lock(counter.value)"),
        Err(
            "scripts.s line 2, column 14: procedure `lock` uses its parameter `p` as a pointer \
             (`*p`), but argument 1 is the value of `counter.value`, a field that never holds a \
             pointer; pass its address: `&counter.value`"
                .to_string()
        )
    );
    // Through another procedure that passes its parameter on.
    assert_eq!(
        lock("let v = outer(stats[2].value)"),
        Err(
            "scripts.s line 1, column 15: procedure `outer` uses its parameter `q` as a pointer \
             (`*q`), but argument 1 is the value of `stats[..].value`, a field that never holds \
             a pointer; pass its address: `&stats[..].value`"
                .to_string()
        )
    );
    assert_eq!(
        lock("let n = 3\nlet v = lock(n + 1)"),
        Err(
            "scripts.s line 2, column 16: procedure `lock` uses its parameter `p` as a pointer \
             (`*p`), but argument 1 is an integer, not a pointer made by `&inst.field`"
                .to_string()
        )
    );
    assert_eq!(lock("let v = lock(&counter.value)"), Ok(()));
    // `counter.slots` holds pointers: its value may be one.
    assert_eq!(
        lock("counter.slots[0] = &stats.value\nlet v = lock(counter.slots[0])"),
        Ok(())
    );
}

/// The names a procedure cannot take are the keywords and the builtins'
/// (each of which a call always reaches first); other names are free.
#[test]
fn reserved_procedure_names_are_the_keywords_and_the_builtins() {
    use sim_core::script::compile::{builtin_call_names, reserved_procedure_name};
    use sim_core::script::parse::{is_keyword, KEYWORDS};
    for k in KEYWORDS {
        assert!(is_keyword(k), "{k}");
        assert!(reserved_procedure_name(k).is_some(), "{k}");
    }
    for b in builtin_call_names() {
        assert!(reserved_procedure_name(b).is_some(), "{b}");
    }
    for free in ["bump", "lock", "tid2", "works"] {
        assert_eq!(reserved_procedure_name(free), None, "{free}");
    }
}
