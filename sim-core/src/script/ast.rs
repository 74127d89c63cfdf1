//! Syntax tree of the bounce script language.
//!
//! A script is a block of statements run once per iteration. Procedures are
//! blocks with named parameters, defined beside the scripts (in the scenario)
//! and called by name. Everything is a signed 64-bit integer: locals, fields,
//! parameters and return values. Conditions are true when non-zero.

/// A position inside one script or procedure text, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SourcePos {
    pub line: u32,
    pub column: u32,
}

pub type Block = Vec<Stmt>;

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub pos: SourcePos,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `let name = expr` declares a local, in scope to the end of its block.
    Let {
        name: String,
        value: Expr,
    },
    /// `name = expr` assigns an existing local.
    Assign {
        name: String,
        value: Expr,
    },
    /// `inst.field = expr`, `inst[i].field = expr`, `inst.field[j] = expr`: a plain store.
    Store {
        place: Place,
        value: Expr,
    },
    /// `work expr`: that many cycles of unrelated local work.
    Work(Expr),
    /// `if cond { } else if cond { } else { }`
    If {
        cond: Expr,
        then_block: Block,
        else_block: Option<Block>,
    },
    /// `while cond { }`
    While {
        cond: Expr,
        body: Block,
    },
    /// `repeat count { }`: the count is evaluated once.
    Repeat {
        count: Expr,
        body: Block,
    },
    Break,
    Continue,
    /// `return` or `return expr`
    Return(Option<Expr>),
    /// `fence`: waits until the store buffer has drained (mfence).
    Fence,
    /// `assert expr`: the run fails, naming the CPU and position, when expr is zero.
    Assert(Expr),
    /// An expression evaluated for its effect, such as a call or an atomic.
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub pos: SourcePos,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    /// A local, a parameter of the enclosing procedure, or a scenario parameter.
    Var(String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// A place read in an expression is a load.
    Load(Place),
    /// `fetch_add(place, v)`, `xchg(place, v)`, ...: returns the old value.
    Atomic(AtomicOp, Place, Vec<Expr>),
    /// A call of a procedure or a builtin (`cpu()`, `random(n)`, ...).
    Call(String, Vec<Expr>),
    /// `&place`: a pointer to a field, an integer that `*p` can use as a
    /// place (it carries the field's address, size and identity).
    AddressOf(Place),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Short-circuit.
    And,
    /// Short-circuit.
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// `fetch_add(place, v)`
    FetchAdd,
    /// `fetch_sub(place, v)`
    FetchSub,
    /// `fetch_or(place, v)`
    FetchOr,
    /// `fetch_and(place, v)`
    FetchAnd,
    /// `xchg(place, v)`
    Xchg,
    /// `cmpxchg(place, expected, new)`: returns the old value; stored only when old == expected.
    CmpXchg,
}

impl AtomicOp {
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::FetchAdd => "fetch_add",
            AtomicOp::FetchSub => "fetch_sub",
            AtomicOp::FetchOr => "fetch_or",
            AtomicOp::FetchAnd => "fetch_and",
            AtomicOp::Xchg => "xchg",
            AtomicOp::CmpXchg => "cmpxchg",
        }
    }
    /// The value the atomic writes over `old`, given its `operand` (and,
    /// for `cmpxchg`, the `expected` value): `None` where a `cmpxchg`
    /// finds another value and writes nothing.
    #[inline]
    pub fn written(self, old: i64, operand: i64, expected: i64) -> Option<i64> {
        match self {
            AtomicOp::FetchAdd => Some(old.wrapping_add(operand)),
            AtomicOp::FetchSub => Some(old.wrapping_sub(operand)),
            AtomicOp::FetchOr => Some(old | operand),
            AtomicOp::FetchAnd => Some(old & operand),
            AtomicOp::Xchg => Some(operand),
            AtomicOp::CmpXchg => (old == expected).then_some(operand),
        }
    }
    /// Number of value operands after the place.
    pub fn operand_count(self) -> usize {
        match self {
            AtomicOp::CmpXchg => 2,
            _ => 1,
        }
    }
    pub fn from_name(name: &str) -> Option<AtomicOp> {
        Some(match name {
            "fetch_add" => AtomicOp::FetchAdd,
            "fetch_sub" => AtomicOp::FetchSub,
            "fetch_or" => AtomicOp::FetchOr,
            "fetch_and" => AtomicOp::FetchAnd,
            "xchg" => AtomicOp::Xchg,
            "cmpxchg" => AtomicOp::CmpXchg,
            _ => return None,
        })
    }
}

/// A field of an instance: `inst.field`, `inst[elem].field`, `inst.field[i]`,
/// or a member of a nested struct by its path, `inst.css.parent`,
/// `inst.items[i].next` (one field index at most).
///
/// For a per-CPU instance, `inst.field` is the running CPU's copy and
/// `inst[c].field` CPU c's; for a per-node instance, the running CPU's node
/// and node n's; for a global instance declared with a count, element 0 and
/// element i.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// `*expr`: the place a pointer made by `&place` points to; the other
    /// parts are then empty.
    pub pointer: Option<Box<Expr>>,
    pub instance: String,
    pub element: Option<Box<Expr>>,
    /// The field's dotted path (`usage`, `css.parent`).
    pub field: String,
    pub field_index: Option<Box<Expr>>,
    /// With a field index: how many path segments come before it
    /// (`items[i].next`: 1; `css.vals[i]`: 2).
    pub index_after_segments: u32,
    pub pos: SourcePos,
}

impl BinaryOp {
    /// How the operator is written in a script.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }
}

impl UnaryOp {
    /// How the operator is written in a script.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "!",
            UnaryOp::BitNot => "~",
        }
    }
}

/// A read-only walk over a body, for the analyses that look at every
/// statement and expression (`kinds.rs`): each hook's default visits the
/// children in source order, so an analysis overrides only the nodes it
/// learns from and calls the `walk_*` function to go on.
pub(crate) trait Visit {
    fn block(&mut self, block: &Block) {
        for stmt in block {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        walk_stmt(self, stmt);
    }

    /// A place accessed; `deref` is whether its pointer (if any) is taken
    /// `*` of (a load, a store, an atomic), not only offset (`&`).
    fn place(&mut self, place: &Place, deref: bool) {
        let _ = deref;
        walk_place(self, place);
    }

    fn expr(&mut self, expr: &Expr) {
        walk_expr(self, expr);
    }
}

pub(crate) fn walk_stmt<V: Visit + ?Sized>(v: &mut V, stmt: &Stmt) {
    match &stmt.kind {
        StmtKind::Let { value, .. }
        | StmtKind::Assign { value, .. }
        | StmtKind::Work(value)
        | StmtKind::Assert(value)
        | StmtKind::Expr(value)
        | StmtKind::Return(Some(value)) => v.expr(value),
        StmtKind::Store { place, value } => {
            v.place(place, true);
            v.expr(value);
        }
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            v.expr(cond);
            v.block(then_block);
            if let Some(b) = else_block {
                v.block(b);
            }
        }
        StmtKind::While { cond: e, body } | StmtKind::Repeat { count: e, body } => {
            v.expr(e);
            v.block(body);
        }
        StmtKind::Return(None) | StmtKind::Break | StmtKind::Continue | StmtKind::Fence => {}
    }
}

pub(crate) fn walk_place<V: Visit + ?Sized>(v: &mut V, place: &Place) {
    for e in [&place.pointer, &place.element, &place.field_index]
        .into_iter()
        .flatten()
    {
        v.expr(e);
    }
}

pub(crate) fn walk_expr<V: Visit + ?Sized>(v: &mut V, expr: &Expr) {
    match &expr.kind {
        ExprKind::Int(_) | ExprKind::Var(_) => {}
        ExprKind::Unary(_, e) => v.expr(e),
        ExprKind::Binary(_, a, b) => {
            v.expr(a);
            v.expr(b);
        }
        ExprKind::Load(place) => v.place(place, true),
        ExprKind::AddressOf(place) => v.place(place, false),
        ExprKind::Atomic(_, place, operands) => {
            v.place(place, true);
            for o in operands {
                v.expr(o);
            }
        }
        ExprKind::Call(_, args) => {
            for a in args {
                v.expr(a);
            }
        }
    }
}
