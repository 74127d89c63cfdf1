//! Compiles script syntax trees into flat code for the interpreter, resolving
//! every name: locals and procedure parameters to slots, scenario parameters
//! to constants, places to instance fields, calls to procedures or builtins.
//!
//! Compiling ahead of the run keeps the interpreter small and fast, and lets
//! every naming mistake be reported before any simulated cycle passes.

use super::ast::*;
use super::kinds::{Kind, Kinds, PointerUse};
use crate::memory::{InstanceKind, MemoryLayout};

/// A procedure as the scenario gives it.
#[derive(Clone, Debug)]
pub struct ProcedureSource {
    pub name: String,
    pub params: Vec<String>,
    pub body: Block,
    /// Cycles of the procedure's own code around its memory accesses (the
    /// instructions no access models), charged as `work` on every call
    /// (so stretched on a shared SMT core); 0 for none.
    pub cost_cycles: u64,
}

/// A script as the scenario gives it.
#[derive(Clone, Debug)]
pub struct ScriptSource {
    pub name: String,
    pub body: Block,
}

/// A naming or arity mistake, at a position inside one script or procedure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// `scripts.NAME` or `procedures.NAME`.
    pub origin: String,
    pub pos: SourcePos,
    pub message: String,
    /// The closest valid name, when one is close.
    pub suggestion: Option<String>,
    /// What would be valid here.
    pub valid: Option<String>,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} line {}, column {}: {}",
            self.origin, self.pos.line, self.pos.column, self.message
        )?;
        if let Some(s) = &self.suggestion {
            write!(f, "; did you mean `{s}`?")?;
        }
        if let Some(v) = &self.valid {
            write!(f, " (valid: {v})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileError {}

/// Builtin functions of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// The running CPU's Linux number.
    Cpu,
    /// Its core, node, socket.
    Core,
    Node,
    Socket,
    /// Index of the CPU inside its thread group, and the group's size.
    Tid,
    Nthreads,
    /// CPUs and nodes of the machine.
    Ncpus,
    Nnodes,
    /// `random(n)`: a seeded uniform draw in 0..n.
    Random,
    /// `uniform(a, b)`: a seeded uniform draw in a..=b (both ends included),
    /// for `work uniform(a, b)`.
    Uniform,
    /// `exp(mean)`: a seeded draw from the exponential distribution of that
    /// mean, rounded to a whole number, for `work exp(mean)`.
    Exp,
    /// The running CPU's current iteration, from 0.
    Iteration,
    /// The current simulated cycle.
    Now,
    Min,
    Max,
    Abs,
    /// `part(p, offset, size)`: a pointer to `size` bytes at `offset` inside
    /// the field `p` points to (a byte or a half of a lock word, as a C union
    /// gives it), attributed to the same field.
    Part,
    /// The running thread's number in the run, from 1 (0 is never a
    /// thread, so a lock word can hold an owner): `task()`.
    Task,
    /// `task_running(t)`: 1 while thread `t` is on a CPU (the kernel's
    /// `owner->on_cpu`, which a mutex's optimistic spinning watches).
    TaskRunning,
    /// `need_resched()`: 1 when the running thread's time slice is over
    /// and another thread waits for its CPU.
    NeedResched,
    /// `yield()`: the thread goes to the back of its CPU's run queue
    /// when another waits there (`sched_yield`).
    Yield,
    /// `sleep(cycles)`: the thread leaves its CPU for that long
    /// (`usleep`, an hrtimer), then wakes with the wake-up latency.
    Sleep,
    /// `futex_wait(p, expected)`: sleeps on the place `p` points to while
    /// it holds `expected` until a `futex_wake` on it; 0 once woken, 1 when
    /// the value differed and it did not sleep.
    FutexWait,
    /// `futex_wake(p, n)`: wakes up to `n` threads sleeping on `p`'s place,
    /// the longest asleep first; the number woken.
    FutexWake,
}

impl Builtin {
    /// The scheduling operations: they read or change which thread runs
    /// where, so they take their turn in the global order as accesses do,
    /// and every shortcut stops at them (the run-ahead loop, as at every
    /// builtin; the spin-wait fast-forward forgets its period).
    pub fn schedules(self) -> bool {
        matches!(
            self,
            Builtin::TaskRunning
                | Builtin::NeedResched
                | Builtin::Yield
                | Builtin::Sleep
                | Builtin::FutexWait
                | Builtin::FutexWake
        )
    }

    /// Whether argument `k` is a pointer made by `&place` (`part`'s and
    /// the futex operations' first).
    pub fn takes_pointer(self, k: usize) -> bool {
        k == 0
            && matches!(
                self,
                Builtin::Part | Builtin::FutexWait | Builtin::FutexWake
            )
    }
}

/// `cost(NAME)`: not in [`Builtin::ALL`], since its argument is a name
/// resolved while compiling, not a value.
pub const COST_BUILTIN: &str = "cost";

/// The atomics a script calls by name, with a place first.
const ATOMIC_NAMES: [&str; 6] = [
    "fetch_add",
    "fetch_sub",
    "fetch_or",
    "fetch_and",
    "xchg",
    "cmpxchg",
];

/// Every name a call can run besides a procedure: the builtins, `cost`
/// and the atomics.
pub fn builtin_call_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Builtin::ALL.iter().map(|(n, _, _)| *n).collect();
    names.push(COST_BUILTIN);
    names.extend(ATOMIC_NAMES);
    names
}

/// Why a procedure cannot be called `name`, if it cannot: a call of a
/// builtin's or an atomic's name always runs the builtin (a procedure of
/// that name would never run), and a keyword is no name at all.
pub fn reserved_procedure_name(name: &str) -> Option<&'static str> {
    if super::parse::is_keyword(name) {
        Some("a keyword of the script language")
    } else if builtin_call_names().contains(&name) {
        Some("a builtin's name: a call of it runs the builtin, never a procedure")
    } else {
        None
    }
}

impl Builtin {
    pub const ALL: [(&'static str, Builtin, usize); 24] = [
        ("cpu", Builtin::Cpu, 0),
        ("core", Builtin::Core, 0),
        ("node", Builtin::Node, 0),
        ("socket", Builtin::Socket, 0),
        ("tid", Builtin::Tid, 0),
        ("nthreads", Builtin::Nthreads, 0),
        ("ncpus", Builtin::Ncpus, 0),
        ("nnodes", Builtin::Nnodes, 0),
        ("random", Builtin::Random, 1),
        ("uniform", Builtin::Uniform, 2),
        ("exp", Builtin::Exp, 1),
        ("iteration", Builtin::Iteration, 0),
        ("now", Builtin::Now, 0),
        ("min", Builtin::Min, 2),
        ("max", Builtin::Max, 2),
        ("abs", Builtin::Abs, 1),
        ("part", Builtin::Part, 3),
        ("task", Builtin::Task, 0),
        ("task_running", Builtin::TaskRunning, 1),
        ("need_resched", Builtin::NeedResched, 0),
        ("yield", Builtin::Yield, 0),
        ("sleep", Builtin::Sleep, 1),
        ("futex_wait", Builtin::FutexWait, 2),
        ("futex_wake", Builtin::FutexWake, 2),
    ];
}

/// A resolved place: which instance and field, and whether the element and
/// field index are computed at run time (popped from the stack).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceRef {
    /// `*p`: the address, size and field come from the pointer on the stack
    /// at run time; the fields below are then unused.
    pub pointer: bool,
    pub instance: u32,
    pub field: u32,
    pub kind: InstanceKind,
    pub has_element: bool,
    pub has_index: bool,
    pub offset_bytes: u32,
    pub size_bytes: u32,
    pub count: u32,
    /// Distance between elements (see `FieldDef::stride_bytes`).
    pub stride_bytes: u32,
    /// Dense id of (instance, field), for attribution.
    pub field_id: u32,
    /// A bitfield's bits inside the bytes above.
    pub bits: Option<crate::memory::BitRange>,
    /// As written, for messages: `stock[c].nr_pages`.
    pub text: String,
    pub origin: u32,
    pub pos: SourcePos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Push(i64),
    Local(u16),
    SetLocal(u16),
    Pop,
    Unary(UnaryOp),
    /// Never And/Or: those compile to jumps.
    Binary(BinaryOp),
    Jump(u32),
    /// A backward jump: one cycle, so that no loop spins in zero time.
    LoopBack(u32),
    JumpIfZero(u32),
    JumpIfNonZero(u32),
    Load(u32),
    Store(u32),
    /// Pushes a pointer to the place (`&place`).
    AddressOf(u32),
    Atomic(AtomicOp, u32),
    Work,
    Fence,
    /// Fails the run when the popped value is zero; the operand indexes `Program::positions`.
    Assert(u32),
    Call(u32),
    Builtin(Builtin),
    /// Return with the popped value.
    Return,
    /// End of one iteration of a script.
    EndIteration,
}

#[derive(Clone, Debug)]
pub struct Code {
    pub name: String,
    pub param_count: u16,
    pub local_count: u16,
    pub ops: Vec<Op>,
    /// Source position of each op, for run-time errors.
    pub op_positions: Vec<SourcePos>,
    pub origin: u32,
}

/// Everything the interpreter runs.
#[derive(Clone, Debug)]
pub struct Program {
    pub scripts: Vec<Code>,
    pub procedures: Vec<Code>,
    pub places: Vec<PlaceRef>,
    /// `scripts.NAME` / `procedures.NAME`, indexed by `Code::origin`.
    pub origins: Vec<String>,
    /// (origin, position) of asserts.
    pub positions: Vec<(u32, SourcePos)>,
    /// Names of the (instance, field) pairs, indexed by `PlaceRef::field_id`.
    pub field_names: Vec<(u32, u32)>,
}

impl Program {
    /// Whether any script or procedure takes the address (`&`) of a field of
    /// instance `instance`: such an instance may be reached from any CPU.
    pub fn ops_take_address_of(&self, instance: usize) -> bool {
        self.scripts
            .iter()
            .chain(&self.procedures)
            .flat_map(|c| &c.ops)
            .any(|op| match op {
                Op::AddressOf(p) => {
                    let place = &self.places[*p as usize];
                    !place.pointer && place.instance as usize == instance
                }
                _ => false,
            })
    }
}

pub const MAX_LOCALS: usize = crate::limits::SCRIPT_LOCALS;
pub const MAX_OPS: usize = crate::limits::SCRIPT_OPS;

/// Compiles scripts and procedures against a memory layout and parameters,
/// on a machine without instruction costs (see [`compile_with_costs`]).
pub fn compile(
    memory: &MemoryLayout,
    params: &[(String, i64)],
    procedures: &[ProcedureSource],
    scripts: &[ScriptSource],
) -> Result<Program, CompileError> {
    compile_with_costs(memory, params, &[], procedures, scripts)
}

/// Compiles as [`compile`] does, with the machine's instruction costs:
/// `cost(NAME)` is the cycles the machine gives the instruction class
/// `NAME` (`cost(irq_save)`), a constant like a scenario parameter, so a
/// library procedure charges what the preset says (`work cost(irq_save)`)
/// rather than a number of its own.
pub fn compile_with_costs(
    memory: &MemoryLayout,
    params: &[(String, i64)],
    instruction_costs: &[(String, i64)],
    procedures: &[ProcedureSource],
    scripts: &[ScriptSource],
) -> Result<Program, CompileError> {
    let mut field_names = Vec::new();
    let mut field_base = Vec::new();
    for (i, inst) in memory.instances.iter().enumerate() {
        field_base.push(field_names.len() as u32);
        for f in 0..memory.structs[inst.struct_index].fields.len() {
            field_names.push((i as u32, f as u32));
        }
    }
    let mut program = Program {
        scripts: Vec::new(),
        procedures: Vec::new(),
        places: Vec::new(),
        origins: Vec::new(),
        positions: Vec::new(),
        field_names,
    };
    let kinds = Kinds::of(params, procedures, scripts);
    let context = Context {
        memory,
        params,
        instruction_costs,
        procedures,
        field_base,
        pointer_use: PointerUse::of(procedures, scripts),
        kinds,
        field_indices: memory
            .structs
            .iter()
            .map(|def| {
                let mut names: Vec<(&str, u32)> = def
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.name.as_str(), i as u32))
                    .collect();
                names.sort_unstable();
                names
            })
            .collect(),
    };
    // Functions are numbered as `Kinds` numbers them: procedures, then scripts.
    for (function, p) in procedures.iter().enumerate() {
        let origin = program.origins.len() as u32;
        program.origins.push(format!("procedures.{}", p.name));
        let code = FunctionCompiler::new(&context, &mut program, origin, &p.name, &p.params)?
            .in_function(function)
            .finish_procedure(&p.body, p.cost_cycles)?;
        program.procedures.push(code);
    }
    for (k, s) in scripts.iter().enumerate() {
        let origin = program.origins.len() as u32;
        program.origins.push(format!("scripts.{}", s.name));
        let code = FunctionCompiler::new(&context, &mut program, origin, &s.name, &[])?
            .in_function(procedures.len() + k)
            .finish_script(&s.body)?;
        program.scripts.push(code);
    }
    Ok(program)
}

struct Context<'a> {
    memory: &'a MemoryLayout,
    params: &'a [(String, i64)],
    /// The machine's instruction classes and their cycles, for `cost(NAME)`.
    instruction_costs: &'a [(String, i64)],
    procedures: &'a [ProcedureSource],
    field_base: Vec<u32>,
    /// Which values are pointers (see [`super::kinds`]).
    kinds: Kinds,
    /// Which parameters are used as pointers and which fields may hold one.
    pointer_use: PointerUse,
    /// Per struct, its fields' names with their indices, sorted: a place
    /// is resolved by a binary search, not a scan of a struct's fields.
    field_indices: Vec<Vec<(&'a str, u32)>>,
}

struct LoopLabels {
    continue_target: u32,
    break_patches: Vec<usize>,
}

struct FunctionCompiler<'a, 'p> {
    context: &'a Context<'a>,
    program: &'p mut Program,
    origin: u32,
    name: String,
    locals: Vec<String>,
    param_count: usize,
    ops: Vec<Op>,
    positions: Vec<SourcePos>,
    loops: Vec<LoopLabels>,
    hidden: usize,
    /// The `let`s of the blocks being compiled: the name, its slot and
    /// where it was declared. A block's go out of scope at its `}`.
    declared: Vec<(String, u16, SourcePos)>,
    /// Names whose block ended, with where they were declared (for the
    /// message when one is used after).
    out_of_scope: Vec<(String, SourcePos)>,
    current: SourcePos,
    /// This function's number in `Context::kinds`.
    function: usize,
}

impl<'a, 'p> FunctionCompiler<'a, 'p> {
    fn new(
        context: &'a Context<'a>,
        program: &'p mut Program,
        origin: u32,
        name: &str,
        params: &[String],
    ) -> Result<Self, CompileError> {
        let mut compiler = FunctionCompiler {
            context,
            program,
            origin,
            name: name.to_string(),
            locals: Vec::new(),
            param_count: params.len(),
            ops: Vec::new(),
            positions: Vec::new(),
            loops: Vec::new(),
            hidden: 0,
            declared: Vec::new(),
            out_of_scope: Vec::new(),
            current: SourcePos { line: 1, column: 1 },
            function: 0,
        };
        for p in params {
            if compiler.locals.contains(p) {
                return Err(compiler.error(
                    SourcePos { line: 1, column: 1 },
                    format!("parameter `{p}` is listed twice"),
                ));
            }
            compiler.locals.push(p.clone());
        }
        Ok(compiler)
    }

    fn in_function(mut self, function: usize) -> Self {
        self.function = function;
        self
    }

    /// Where `expr`'s value may come from (see [`super::kinds`]).
    fn kind(&self, expr: &Expr) -> Kind {
        self.context
            .kinds
            .of_expr(self.function, self.context.params, expr)
    }

    /// Refuses a pointer where a number is meant (`what`: an index, a
    /// builtin's argument, a `work` count): pointers are opaque.
    fn refuse_pointer(&self, expr: &Expr, what: &str) -> Result<(), CompileError> {
        if !self.kind(expr).may_be_pointer() {
            return Ok(());
        }
        let mut e = self.error(
            expr.pos,
            format!(
                "{what} holds a pointer (made by `&` or `part`), and pointers are opaque: \
                 no number is made of one"
            ),
        );
        e.valid = Some(POINTER_USES.into());
        Err(e)
    }

    fn error(&self, pos: SourcePos, message: String) -> CompileError {
        CompileError {
            origin: self.program.origins[self.origin as usize].clone(),
            pos,
            message,
            suggestion: None,
            valid: None,
        }
    }

    fn error_with_choices(
        &self,
        pos: SourcePos,
        message: String,
        given: &str,
        candidates: &[&str],
    ) -> CompileError {
        let mut e = self.error(pos, message);
        e.suggestion = closest(given, candidates).map(str::to_string);
        e.valid = Some(if candidates.is_empty() {
            "none".to_string()
        } else {
            candidates.join(", ")
        });
        e
    }

    fn emit(&mut self, op: Op) -> usize {
        self.ops.push(op);
        self.positions.push(self.current);
        self.ops.len() - 1
    }

    fn here(&self) -> u32 {
        self.ops.len() as u32
    }

    fn patch(&mut self, at: usize, target: u32) {
        self.ops[at] = match self.ops[at] {
            Op::Jump(_) => Op::Jump(target),
            Op::JumpIfZero(_) => Op::JumpIfZero(target),
            Op::JumpIfNonZero(_) => Op::JumpIfNonZero(target),
            other => other,
        };
    }

    fn finish_procedure(mut self, body: &Block, cost_cycles: u64) -> Result<Code, CompileError> {
        // The procedure's own instructions, charged on entry.
        if cost_cycles > 0 {
            self.emit(Op::Push(cost_cycles.min(i64::MAX as u64) as i64));
            self.emit(Op::Work);
        }
        self.block(body)?;
        self.emit(Op::Push(0));
        self.emit(Op::Return);
        self.finish()
    }

    fn finish_script(mut self, body: &Block) -> Result<Code, CompileError> {
        self.block(body)?;
        self.emit(Op::EndIteration);
        self.finish()
    }

    fn finish(self) -> Result<Code, CompileError> {
        if self.ops.len() > MAX_OPS {
            return Err(self.error(
                SourcePos { line: 1, column: 1 },
                format!("compiles to more than {MAX_OPS} operations; split it into procedures"),
            ));
        }
        if self.locals.len() > MAX_LOCALS {
            return Err(self.error(
                SourcePos { line: 1, column: 1 },
                format!("uses more than {MAX_LOCALS} locals"),
            ));
        }
        Ok(Code {
            name: self.name,
            param_count: self.param_count as u16,
            local_count: self.locals.len() as u16,
            ops: self.ops,
            op_positions: self.positions,
            origin: self.origin,
        })
    }

    /// A block's statements. A `let` is scoped to its block: at the end
    /// its name goes out of scope (its slot stays, unused), so a later
    /// `let` of the same name, in another block or after this one, is a
    /// new local.
    fn block(&mut self, block: &Block) -> Result<(), CompileError> {
        let outer = self.declared.len();
        for stmt in block {
            self.stmt(stmt)?;
        }
        for (name, slot, pos) in self.declared.drain(outer..) {
            self.locals[slot as usize] = format!(" out of scope {name}");
            self.out_of_scope.push((name, pos));
        }
        Ok(())
    }

    /// The error for `name` used at `pos` where it is not declared: when a
    /// block's `let` declared it, says so, otherwise `otherwise`; with the
    /// nearest known name as its suggestion.
    fn undeclared(&self, pos: SourcePos, name: &str, otherwise: String) -> CompileError {
        let message = match self.out_of_scope.iter().rev().find(|(n, _)| n == name) {
            Some((_, declared)) => format!(
                "`{name}` is out of scope here: its `let` (line {}) is inside a block that has \
                 ended; a `let` is scoped to its block, so declare `{name}` before the block \
                 (`let {name} = 0`) and assign it inside",
                declared.line
            ),
            None => otherwise,
        };
        let mut e = self.error(pos, message);
        e.suggestion = self.suggest(name);
        e
    }

    /// The names a bare name can read here: the locals in scope (a
    /// procedure's parameters among them) and the scenario's parameters.
    fn names_in_scope(&self) -> String {
        let mut locals: Vec<&str> = Vec::new();
        for local in self.locals.iter().filter(|l| !l.starts_with(' ')) {
            if !locals.contains(&local.as_str()) {
                locals.push(local);
            }
        }
        let params: Vec<&str> = self
            .context
            .params
            .iter()
            .map(|(p, _)| p.as_str())
            .collect();
        let list = |names: &[&str]| {
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        };
        if locals.is_empty() && params.is_empty() {
            return "a local declared before this line (`let NAME = ...`) or a scenario \
                    parameter (`[params]`); there are none here"
                .to_string();
        }
        format!(
            "a local in scope here: {}; a scenario parameter: {}",
            list(&locals),
            list(&params)
        )
    }

    fn local_slot(&self, name: &str) -> Option<u16> {
        self.locals
            .iter()
            .rposition(|l| l == name)
            .map(|i| i as u16)
    }

    fn new_hidden_local(&mut self) -> u16 {
        self.hidden += 1;
        self.locals.push(format!(" hidden{}", self.hidden));
        (self.locals.len() - 1) as u16
    }

    /// Compiles one statement: one arm per statement kind, the longer ones
    /// a method each.
    fn stmt(&mut self, stmt: &Stmt) -> Result<(), CompileError> {
        self.current = stmt.pos;
        match &stmt.kind {
            StmtKind::Let { name, value } => self.let_local(stmt.pos, name, value)?,
            StmtKind::Assign { name, value } => self.assign_local(stmt.pos, name, value)?,
            StmtKind::Store { place, value } => {
                let place_id = self.place(place)?;
                self.expr(value)?;
                self.current = stmt.pos;
                self.emit(Op::Store(place_id));
            }
            StmtKind::Work(cycles) => {
                self.refuse_pointer(cycles, "the count of `work`")?;
                self.expr(cycles)?;
                self.current = stmt.pos;
                self.emit(Op::Work);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => self.if_else(cond, then_block, else_block.as_ref())?,
            StmtKind::While { cond, body } => self.while_loop(stmt.pos, cond, body)?,
            StmtKind::Repeat { count, body } => self.repeat_loop(stmt.pos, count, body)?,
            StmtKind::Break => {
                if self.loops.is_empty() {
                    return Err(self.error(stmt.pos, "`break` outside a loop".into()));
                }
                let at = self.emit(Op::Jump(0));
                self.loops.last_mut().unwrap().break_patches.push(at);
            }
            StmtKind::Continue => {
                let Some(target) = self.loops.last().map(|l| l.continue_target) else {
                    return Err(self.error(stmt.pos, "`continue` outside a loop".into()));
                };
                self.emit(Op::LoopBack(target));
            }
            StmtKind::Return(value) => self.return_stmt(stmt.pos, value.as_ref())?,
            StmtKind::Fence => {
                self.emit(Op::Fence);
            }
            StmtKind::Assert(cond) => {
                self.expr(cond)?;
                let index = self.program.positions.len() as u32;
                self.program.positions.push((self.origin, stmt.pos));
                self.current = stmt.pos;
                self.emit(Op::Assert(index));
            }
            StmtKind::Expr(e) => {
                self.expr(e)?;
                self.emit(Op::Pop);
            }
        }
        Ok(())
    }

    /// `let name = value`: a new local, refused where the name is taken.
    fn let_local(&mut self, pos: SourcePos, name: &str, value: &Expr) -> Result<(), CompileError> {
        if self.local_slot(name).is_some() {
            return Err(self.error(
                pos,
                format!("`{name}` is already declared here; assign it with `{name} = ...`"),
            ));
        }
        if self.context.params.iter().any(|(p, _)| p == name) {
            return Err(self.error(
                pos,
                format!("`{name}` is a scenario parameter; choose another name for the local"),
            ));
        }
        self.expr(value)?;
        self.locals.push(name.to_string());
        let slot = (self.locals.len() - 1) as u16;
        self.declared.push((name.to_string(), slot, pos));
        self.emit(Op::SetLocal(slot));
        Ok(())
    }

    /// `name = value`: a local declared before.
    fn assign_local(
        &mut self,
        pos: SourcePos,
        name: &str,
        value: &Expr,
    ) -> Result<(), CompileError> {
        let Some(slot) = self.local_slot(name) else {
            if self.context.params.iter().any(|(p, _)| p == name) {
                return Err(self.error(
                    pos,
                    format!("`{name}` is a scenario parameter and cannot be assigned"),
                ));
            }
            return Err(self.undeclared(
                pos,
                name,
                format!("`{name}` is not declared; declare it with `let {name} = ...`"),
            ));
        };
        self.expr(value)?;
        self.emit(Op::SetLocal(slot));
        Ok(())
    }

    /// `if cond { } else { }`: a jump past each branch.
    fn if_else(
        &mut self,
        cond: &Expr,
        then_block: &Block,
        else_block: Option<&Block>,
    ) -> Result<(), CompileError> {
        self.expr(cond)?;
        let to_else = self.emit(Op::JumpIfZero(0));
        self.block(then_block)?;
        if let Some(else_block) = else_block {
            let to_end = self.emit(Op::Jump(0));
            let else_start = self.here();
            self.patch(to_else, else_start);
            self.block(else_block)?;
            let end = self.here();
            self.patch(to_end, end);
        } else {
            let end = self.here();
            self.patch(to_else, end);
        }
        Ok(())
    }

    /// `while cond { }`: the test at the top, a back-edge at the end.
    fn while_loop(
        &mut self,
        pos: SourcePos,
        cond: &Expr,
        body: &Block,
    ) -> Result<(), CompileError> {
        let top = self.here();
        self.expr(cond)?;
        let exit = self.emit(Op::JumpIfZero(0));
        self.loops.push(LoopLabels {
            continue_target: top,
            break_patches: vec![exit],
        });
        self.block(body)?;
        self.current = pos;
        self.emit(Op::LoopBack(top));
        self.close_loop();
        Ok(())
    }

    /// `repeat count { }`: the count evaluated once into a hidden local,
    /// counted down at the top.
    fn repeat_loop(
        &mut self,
        pos: SourcePos,
        count: &Expr,
        body: &Block,
    ) -> Result<(), CompileError> {
        self.refuse_pointer(count, "the count of `repeat`")?;
        self.expr(count)?;
        let counter = self.new_hidden_local();
        self.emit(Op::SetLocal(counter));
        let top = self.here();
        self.emit(Op::Local(counter));
        self.emit(Op::Push(0));
        self.emit(Op::Binary(BinaryOp::Gt));
        let exit = self.emit(Op::JumpIfZero(0));
        self.emit(Op::Local(counter));
        self.emit(Op::Push(1));
        self.emit(Op::Binary(BinaryOp::Sub));
        self.emit(Op::SetLocal(counter));
        self.loops.push(LoopLabels {
            continue_target: top,
            break_patches: vec![exit],
        });
        self.block(body)?;
        self.current = pos;
        self.emit(Op::LoopBack(top));
        self.close_loop();
        Ok(())
    }

    /// `return`: a script's ends the iteration; a procedure's returns its
    /// value (0 without one).
    fn return_stmt(&mut self, pos: SourcePos, value: Option<&Expr>) -> Result<(), CompileError> {
        if self.program.origins[self.origin as usize].starts_with("scripts.") {
            if value.is_some() {
                return Err(self.error(
                    pos,
                    "a script's `return` ends the iteration and takes no value".into(),
                ));
            }
            self.emit(Op::EndIteration);
        } else {
            match value {
                Some(v) => self.expr(v)?,
                None => {
                    self.emit(Op::Push(0));
                }
            }
            self.current = pos;
            self.emit(Op::Return);
        }
        Ok(())
    }

    fn close_loop(&mut self) {
        let labels = self
            .loops
            .pop()
            .expect("loop labels pushed before the body");
        let end = self.here();
        for at in labels.break_patches {
            self.patch(at, end);
        }
    }

    fn suggest(&self, name: &str) -> Option<String> {
        let mut candidates: Vec<&str> = self
            .locals
            .iter()
            .filter(|l| !l.starts_with(' '))
            .map(|s| s.as_str())
            .collect();
        candidates.extend(self.context.params.iter().map(|(p, _)| p.as_str()));
        closest(name, &candidates).map(str::to_string)
    }

    /// Compiles one expression, its value left on the operand stack: one
    /// arm per expression kind, the longer ones a method each.
    fn expr(&mut self, expr: &Expr) -> Result<(), CompileError> {
        self.current = expr.pos;
        match &expr.kind {
            ExprKind::Int(v) => {
                self.emit(Op::Push(*v));
            }
            ExprKind::Var(name) => self.var(expr.pos, name)?,
            ExprKind::Unary(op, inner) => {
                if *op != UnaryOp::Not {
                    self.refuse_pointer(inner, &format!("the operand of `{}`", op.symbol()))?;
                }
                self.expr(inner)?;
                self.current = expr.pos;
                self.emit(Op::Unary(*op));
            }
            ExprKind::Binary(BinaryOp::And, a, b) => self.short_circuit(a, b, false)?,
            ExprKind::Binary(BinaryOp::Or, a, b) => self.short_circuit(a, b, true)?,
            ExprKind::Binary(op, a, b) => {
                if !is_comparison(*op) {
                    let text = op.symbol();
                    self.refuse_pointer(a, &format!("the left operand of `{text}`"))?;
                    self.refuse_pointer(b, &format!("the right operand of `{text}`"))?;
                }
                self.expr(a)?;
                self.expr(b)?;
                self.current = expr.pos;
                self.emit(Op::Binary(*op));
            }
            ExprKind::Load(place) => {
                let id = self.place(place)?;
                self.current = expr.pos;
                self.emit(Op::Load(id));
            }
            ExprKind::Atomic(op, place, operands) => self.atomic(expr.pos, *op, place, operands)?,
            ExprKind::AddressOf(place) => {
                if let Some(pointer) = &place.pointer {
                    // `&*p` is `p`.
                    self.expr(pointer)?;
                } else {
                    let id = self.place(place)?;
                    self.refuse_bitfield(id, "`&` of")?;
                    self.current = expr.pos;
                    self.emit(Op::AddressOf(id));
                }
            }
            ExprKind::Call(name, args) if name == COST_BUILTIN => self.cost(expr.pos, args)?,
            ExprKind::Call(name, args) => self.call(expr.pos, name, args)?,
        }
        Ok(())
    }

    /// A name's value: a local's, or a scenario parameter's.
    fn var(&mut self, pos: SourcePos, name: &str) -> Result<(), CompileError> {
        if let Some(slot) = self.local_slot(name) {
            self.emit(Op::Local(slot));
        } else if let Some((_, value)) = self.context.params.iter().find(|(p, _)| p == name) {
            self.emit(Op::Push(*value));
        } else {
            if self.context.memory.instance_index(name).is_some() {
                return Err(self.error(
                    pos,
                    format!("`{name}` is an instance: name a field, as `{name}.field`"),
                ));
            }
            let out_of_scope = self.out_of_scope.iter().any(|(n, _)| n == name);
            let mut e = self.undeclared(
                pos,
                name,
                format!("unknown name `{name}`: not a local, a procedure parameter or a scenario parameter"),
            );
            // An out-of-scope `let` has its own advice; any other unknown
            // name is told what it could have read.
            if !out_of_scope {
                e.valid = Some(self.names_in_scope());
            }
            return Err(e);
        }
        Ok(())
    }

    /// An atomic on a place, its operands checked against the operation.
    fn atomic(
        &mut self,
        pos: SourcePos,
        op: AtomicOp,
        place: &Place,
        operands: &[Expr],
    ) -> Result<(), CompileError> {
        let id = self.place(place)?;
        self.refuse_bitfield(id, &format!("`{}` of", op.name()))?;
        if operands.len() != op.operand_count() {
            return Err(self.error(
                pos,
                format!(
                    "`{}` takes a place and {} value(s), found {}",
                    op.name(),
                    op.operand_count(),
                    operands.len()
                ),
            ));
        }
        for operand in operands {
            // An exchange stores a pointer as it is; an add or a
            // bit operation would compute with it.
            if !matches!(op, AtomicOp::Xchg | AtomicOp::CmpXchg) {
                self.refuse_pointer(operand, &format!("the operand of `{}`", op.name()))?;
            }
            self.expr(operand)?;
        }
        self.current = pos;
        self.emit(Op::Atomic(op, id));
        Ok(())
    }

    /// A call of a builtin or a procedure (`cost` is compiled apart).
    fn call(&mut self, pos: SourcePos, name: &str, args: &[Expr]) -> Result<(), CompileError> {
        if let Some(&(_, builtin, arity)) = Builtin::ALL.iter().find(|(n, _, _)| *n == name) {
            self.builtin_call(pos, name, builtin, arity, args)
        } else if let Some(index) = self.context.procedures.iter().position(|p| p.name == name) {
            self.procedure_call(pos, name, index, args)
        } else {
            Err(self.unknown_call(pos, name))
        }
    }

    /// A builtin's call: its arity, and a pointer where it takes one.
    fn builtin_call(
        &mut self,
        pos: SourcePos,
        name: &str,
        builtin: Builtin,
        arity: usize,
        args: &[Expr],
    ) -> Result<(), CompileError> {
        if args.len() != arity {
            return Err(self.error(
                pos,
                format!("`{name}` takes {arity} argument(s), found {}", args.len()),
            ));
        }
        for (k, a) in args.iter().enumerate() {
            if builtin.takes_pointer(k) {
                if self.kind(a).only_integers() {
                    let mut e = self.error(
                        a.pos,
                        format!(
                            "`{name}` takes a pointer first, and this value is always an integer"
                        ),
                    );
                    e.valid = Some(MADE_BY.into());
                    return Err(e);
                }
            } else {
                self.refuse_pointer(a, &format!("argument {} of `{name}`", k + 1))?;
            }
            self.expr(a)?;
        }
        self.current = pos;
        self.emit(Op::Builtin(builtin));
        Ok(())
    }

    /// Procedure `index`'s call: its arity, and a pointer for each
    /// parameter it uses as one.
    fn procedure_call(
        &mut self,
        pos: SourcePos,
        name: &str,
        index: usize,
        args: &[Expr],
    ) -> Result<(), CompileError> {
        let arity = self.context.procedures[index].params.len();
        if args.len() != arity {
            return Err(self.error(
                pos,
                format!(
                    "procedure `{name}` takes {arity} argument(s), found {}",
                    args.len()
                ),
            ));
        }
        for (k, a) in args.iter().enumerate() {
            self.refuse_value_for_pointer(index, k, a)?;
            self.expr(a)?;
        }
        self.current = pos;
        self.emit(Op::Call(index as u32));
        Ok(())
    }

    /// A call of a name that is neither a builtin nor a procedure, with the
    /// closest of those.
    fn unknown_call(&self, pos: SourcePos, name: &str) -> CompileError {
        let mut candidates: Vec<&str> = Builtin::ALL.iter().map(|(n, _, _)| *n).collect();
        candidates.push(COST_BUILTIN);
        candidates.extend(self.context.procedures.iter().map(|p| p.name.as_str()));
        candidates.extend(ATOMIC_NAMES.iter());
        self.error_with_choices(
            pos,
            format!("unknown procedure or builtin `{name}`"),
            name,
            &candidates,
        )
    }

    /// Argument `k` of a call of procedure `procedure`, when the procedure
    /// uses that parameter as a pointer: refuses a value that cannot be one
    /// (a field that never holds a pointer, most often a missing `&`, or
    /// an integer made in the script), which `*` would refuse at run time.
    fn refuse_value_for_pointer(
        &self,
        procedure: usize,
        k: usize,
        arg: &Expr,
    ) -> Result<(), CompileError> {
        let uses = &self.context.pointer_use;
        if !uses.param_is_pointer(procedure, k) {
            return Ok(());
        }
        let callee = &self.context.procedures[procedure];
        let param = &callee.params[k];
        let what = match &arg.kind {
            ExprKind::Load(place)
                if place.pointer.is_none()
                    && !uses.may_hold_pointer(&place.instance, &place.field) =>
            {
                let shape = super::parse::place_shape(place);
                format!(
                    "the value of `{shape}`, a field that never holds a pointer; pass its \
                     address: `&{shape}`"
                )
            }
            _ if self
                .context
                .kinds
                .of_expr(self.function, self.context.params, arg)
                .only_integers() =>
            {
                "an integer, not a pointer made by `&inst.field`".to_string()
            }
            _ => return Ok(()),
        };
        Err(self.error(
            arg.pos,
            format!(
                "procedure `{}` uses its parameter `{param}` as a pointer (`*{param}`), but \
                 argument {} is {what}",
                callee.name,
                k + 1
            ),
        ))
    }

    /// A bitfield has no address of its own and no atomic instruction
    /// reaches it, as in C: `what` is `&` or the atomic.
    fn refuse_bitfield(&self, place_id: u32, what: &str) -> Result<(), CompileError> {
        let place = &self.program.places[place_id as usize];
        if place.bits.is_none() {
            return Ok(());
        }
        let mut e = self.error(
            place.pos,
            format!(
                "{what} the bitfield `{}`: a bitfield shares its storage unit with its neighbours and has no address of its own",
                place.text
            ),
        );
        e.valid = Some("a load or a store of the bitfield, or an atomic on a whole field".into());
        Err(e)
    }

    /// Refuses a field some element or index of which lies across a line
    /// boundary: an access takes one line in this model, and a locked
    /// access across two lines is an x86 split lock (a bus lock, far
    /// dearer than a line transfer), which it does not model. The first
    /// `line` elements and indices are all there is to check: elements
    /// start on line boundaries or at multiples of the struct's size, and
    /// indices at multiples of the stride, so the offsets within a line
    /// repeat after at most `line` of either.
    fn refuse_straddling(
        &self,
        place: &Place,
        instance: usize,
        field: usize,
    ) -> Result<(), CompileError> {
        let memory = self.context.memory;
        let line = memory.line_size_bytes.max(1) as u64;
        let inst = &memory.instances[instance];
        let def = memory.struct_of(instance);
        let f = &def.fields[field];
        let access_bytes = f.size_bytes.clamp(1, 8) as u64;
        for (element, &base) in inst
            .element_addresses
            .iter()
            .enumerate()
            .take(line as usize)
        {
            for index in 0..(f.count as u64).min(line) {
                let start = base + f.offset_bytes as u64 + index * f.stride_bytes as u64;
                if start / line == (start + access_bytes - 1) / line {
                    continue;
                }
                let offset = f.offset_bytes as u64 + index * f.stride_bytes as u64;
                let mut which = Vec::new();
                if inst.element_addresses.len() > 1 {
                    which.push(format!("element {element} of `{}`", inst.name));
                }
                if f.count > 1 {
                    which.push(format!("index {index}"));
                }
                let which = if which.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", which.join(", "))
                };
                let mut e = self.error(
                    place.pos,
                    format!(
                        "`{}.{}` straddles two cache lines: its {access_bytes} bytes at offset \
                         {offset} of struct `{}`{which} cross a {line}-byte line boundary, and an \
                         access here takes one line (a locked access across two lines is an x86 \
                         split lock, which bounce does not model)",
                        inst.name, f.name, def.name
                    ),
                );
                e.valid = Some(format!(
                    "an `offset` or `align` of `{}` in `structs.{}` that keeps it inside one line",
                    f.name, def.name
                ));
                return Err(e);
            }
        }
        Ok(())
    }

    /// `cost(NAME)`: the machine's cycles for the instruction class `NAME`,
    /// pushed as a constant.
    fn cost(&mut self, pos: SourcePos, args: &[Expr]) -> Result<(), CompileError> {
        let names: Vec<&str> = self
            .context
            .instruction_costs
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        let class = match args {
            [Expr {
                kind: ExprKind::Var(class),
                ..
            }] => class,
            _ => {
                let mut e = self.error(
                    pos,
                    format!(
                        "`{COST_BUILTIN}` takes the name of an instruction class, as `{COST_BUILTIN}(irq_save)`, found {} argument(s)",
                        args.len()
                    ),
                );
                e.valid = Some(if names.is_empty() {
                    "none: the machine gives no instruction costs".to_string()
                } else {
                    names.join(", ")
                });
                return Err(e);
            }
        };
        match self
            .context
            .instruction_costs
            .iter()
            .find(|(n, _)| n == class)
        {
            Some(&(_, cycles)) => {
                self.current = pos;
                self.emit(Op::Push(cycles));
                Ok(())
            }
            None => Err(self.error_with_choices(
                pos,
                format!("the machine gives no cost for the instruction class `{class}`"),
                class,
                &names,
            )),
        }
    }

    /// `a && b` (`decided_by = false`) or `a || b` (`decided_by = true`):
    /// when `a` already decides, `b` is not evaluated; the result is 0 or 1.
    fn short_circuit(&mut self, a: &Expr, b: &Expr, decided_by: bool) -> Result<(), CompileError> {
        self.expr(a)?;
        let to_decided = self.emit(if decided_by {
            Op::JumpIfNonZero(0)
        } else {
            Op::JumpIfZero(0)
        });
        self.expr(b)?;
        self.emit(Op::Push(0));
        self.emit(Op::Binary(BinaryOp::Ne));
        let to_end = self.emit(Op::Jump(0));
        let decided_at = self.here();
        self.patch(to_decided, decided_at);
        self.emit(Op::Push(decided_by as i64));
        let end = self.here();
        self.patch(to_end, end);
        Ok(())
    }

    /// Resolves a place (`inst.field`, `inst[e].field[i]`, `*p`, a bitfield)
    /// to its entry in the program's places, its run-time operands
    /// compiled: the instance and field looked up (`field_of`), their use
    /// checked (`check_field_use`), then the entry made.
    fn place(&mut self, place: &Place) -> Result<u32, CompileError> {
        if let Some(pointer) = &place.pointer {
            return self.pointer_place(place, pointer);
        }
        let (instance, field) = self.field_of(place)?;
        self.check_field_use(place, instance, field)?;
        let memory = self.context.memory;
        let f = &memory.struct_of(instance).fields[field];
        let inst = &memory.instances[instance];
        self.refuse_straddling(place, instance, field)?;
        // Operands in stack order: element, then field index.
        if let Some(e) = &place.element {
            self.refuse_pointer(e, "the element index")?;
            self.expr(e)?;
        }
        if let Some(i) = &place.field_index {
            self.refuse_pointer(i, "the field index")?;
            self.expr(i)?;
        }
        let text = format!(
            "{}{}.{}",
            place.instance,
            if place.element.is_some() { "[..]" } else { "" },
            f.written("..")
        );
        let id = self.program.places.len() as u32;
        self.program.places.push(PlaceRef {
            pointer: false,
            instance: instance as u32,
            field: field as u32,
            kind: inst.kind,
            has_element: place.element.is_some(),
            has_index: place.field_index.is_some(),
            offset_bytes: f.offset_bytes,
            size_bytes: f.size_bytes,
            count: f.count,
            stride_bytes: f.stride_bytes,
            field_id: self.context.field_base[instance] + field as u32,
            bits: f.bits,
            text,
            origin: self.origin,
            pos: place.pos,
        });
        Ok(id)
    }

    /// `*p`: the pointer's value is the address, known at run time only.
    fn pointer_place(&mut self, place: &Place, pointer: &Expr) -> Result<u32, CompileError> {
        if self.kind(pointer).only_integers() {
            let mut e = self.error(
                place.pos,
                "`*` takes a pointer, and this value is always an integer (a number, \
                 arithmetic, a comparison or a builtin's value)"
                    .into(),
            );
            e.valid = Some(MADE_BY.into());
            return Err(e);
        }
        self.expr(pointer)?;
        let id = self.program.places.len() as u32;
        self.program.places.push(PlaceRef {
            pointer: true,
            instance: 0,
            field: 0,
            kind: InstanceKind::Global,
            has_element: false,
            has_index: false,
            offset_bytes: 0,
            size_bytes: 0,
            count: 1,
            stride_bytes: 0,
            field_id: 0,
            bits: None,
            text: "*..".to_string(),
            origin: self.origin,
            pos: place.pos,
        });
        Ok(id)
    }

    /// The instance and field a place names, or the error naming the
    /// closest of those there are.
    fn field_of(&self, place: &Place) -> Result<(usize, usize), CompileError> {
        let memory = self.context.memory;
        let Some(instance) = memory.instance_index(&place.instance) else {
            let names: Vec<&str> = memory.instances.iter().map(|i| i.name.as_str()).collect();
            return Err(self.error_with_choices(
                place.pos,
                format!("unknown instance `{}`", place.instance),
                &place.instance,
                &names,
            ));
        };
        let def = memory.struct_of(instance);
        let names = &self.context.field_indices[memory.instances[instance].struct_index];
        let found = names
            .binary_search_by(|(n, _)| (*n).cmp(place.field.as_str()))
            .ok()
            .map(|k| names[k].1 as usize);
        let Some(field) = found else {
            let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
            // Point at the field name, after `inst.` (when no element index
            // sits between them).
            let mut pos = place.pos;
            if place.element.is_none() {
                pos.column += place.instance.chars().count() as u32 + 1;
            }
            return Err(self.error_with_choices(
                pos,
                format!(
                    "struct `{}` (of instance `{}`) has no field `{}`",
                    def.name, place.instance, place.field
                ),
                &place.field,
                &names,
            ));
        };
        Ok((instance, field))
    }

    /// Whether the place uses its field as the field is: not of size 0,
    /// indexed where (and only where) it is an array, one element of an
    /// array of instances chosen.
    fn check_field_use(
        &self,
        place: &Place,
        instance: usize,
        field: usize,
    ) -> Result<(), CompileError> {
        let memory = self.context.memory;
        let def = memory.struct_of(instance);
        let f = &def.fields[field];
        if f.size_bytes == 0 {
            return Err(self.error(
                place.pos,
                format!(
                    "`{}` has size 0 (as `local_lock_t` without lockdep): there is nothing to load or store",
                    place.field
                ),
            ));
        }
        if f.count > 1 && place.field_index.is_none() {
            return Err(self.error(
                place.pos,
                format!(
                    "`{}` is an array of {}; index it, as `{}.{}`",
                    place.field,
                    f.count,
                    place.instance,
                    f.written("i")
                ),
            ));
        }
        if f.count == 1 && place.field_index.is_some() {
            return Err(self.error(
                place.pos,
                format!("`{}` is not an array and takes no index", place.field),
            ));
        }
        if f.count > 1 && place.index_after_segments != f.index_after_segments {
            return Err(self.error(
                place.pos,
                format!(
                    "`{}` is indexed where its array is: write `{}.{}`",
                    place.field,
                    place.instance,
                    f.written("i")
                ),
            ));
        }
        let inst = &memory.instances[instance];
        if inst.kind == InstanceKind::Global
            && inst.element_addresses.len() > 1
            && place.element.is_none()
        {
            return Err(self.error(
                place.pos,
                format!(
                    "`{}` is an array of {} instances; choose one, as `{}[i].{}`",
                    place.instance,
                    inst.element_addresses.len(),
                    place.instance,
                    place.field
                ),
            ));
        }
        Ok(())
    }
}

/// Where pointers come from, for errors.
const MADE_BY: &str =
    "a pointer made by `&inst.field` (or `part` of one), passed, stored or loaded unchanged";

/// What a pointer is good for, for errors.
const POINTER_USES: &str = "compare, store, pass, return or dereference a pointer (`*p`); \
     `part(p, offset, size)` points at bytes inside its field";

/// Whether `op` compares (or combines truth values): it may take pointers.
fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::And
            | BinaryOp::Or
    )
}

/// The closest candidate to `given`, when it is close enough to be a typo.
pub fn closest<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(given, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3) && *d > 0)
        .min()
        .map(|(_, c)| c)
}
