//! Parser of the bounce script language.
//!
//! [`parse_block`] turns the text of a script (or of a procedure body) into a
//! [`Block`]. The grammar:
//!
//! ```text
//! block     := { sep } [ stmt { sep { sep } stmt } ] { sep }      sep := newline | ";"
//! stmt      := "let" NAME "=" expr
//!            | NAME "=" expr                      (Assign)
//!            | place "=" expr                     (Store)
//!            | "work" expr | "assert" expr | "fence" | "break" | "continue"
//!            | "return" [ expr ]
//!            | "if" expr "{" block "}" [ "else" ( "{" block "}" | if-stmt ) ]
//!            | "while" expr "{" block "}" | "repeat" expr "{" block "}"
//!            | expr                               (Expr)
//! expr      := binary operators, lowest to highest, all left-associative:
//!              ||   &&   |   ^   &   == !=   < <= > >=   << >>   + -   * / %
//! unary     := ( "-" | "!" | "~" ) unary | primary
//! primary   := INT | "(" expr ")" | NAME | NAME "(" [ expr { "," expr } [ "," ] ] ")" | place
//! place     := NAME [ "[" expr "]" ] "." NAME [ "[" expr "]" ]
//! ```
//!
//! Newlines end statements, except inside `(...)` and `[...]`, after a binary
//! operator, a comma or an `=`, between a condition (or count) and its `{`,
//! and between a `}` and a following `else`. Comments run from `#` or `//` to
//! the end of the line.
//!
//! Positions: a statement is at its first token; a binary expression at its
//! operator; a unary expression or a folded negative literal at its `-`, `!`
//! or `~`; a call, an atomic, a load and a place at the name that starts them.

use std::fmt;

use super::ast::{
    AtomicOp, BinaryOp, Block, Expr, ExprKind, Place, SourcePos, Stmt, StmtKind, UnaryOp,
};

/// Deepest nesting accepted: blocks, parentheses and brackets, unary
/// operators and binary operators (each operator of an expression counts as
/// one level, as does each `else if`). Deeper input is rejected with an error
/// instead of exhausting the stack here or in whatever walks the tree later.
pub const MAX_NESTING_DEPTH: usize = crate::limits::SCRIPT_NESTING;

/// A syntax error, at the offending token.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub message: String,
    pub pos: SourcePos,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.pos.line, self.pos.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole script text (or a procedure body) into a block.
pub fn parse_block(source: &str) -> Result<Block, ParseError> {
    let mut parser = Parser {
        tokens: lex(source),
        idx: 0,
        group_depth: 0,
        depth: 0,
    };
    parser.parse_stmts(None)
}

fn error(pos: SourcePos, message: impl Into<String>) -> ParseError {
    ParseError {
        message: message.into(),
        pos,
    }
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keyword {
    Let,
    If,
    Else,
    While,
    Repeat,
    Break,
    Continue,
    Return,
    Work,
    Fence,
    Assert,
}

/// The script language's keywords, which no procedure or other name can be.
pub const KEYWORDS: [&str; 11] = [
    "let", "if", "else", "while", "repeat", "break", "continue", "return", "work", "fence",
    "assert",
];

/// Whether `name` is one of [`KEYWORDS`].
pub fn is_keyword(name: &str) -> bool {
    Keyword::from_ident(name).is_some()
}

impl Keyword {
    fn from_ident(s: &str) -> Option<Keyword> {
        Some(match s {
            "let" => Keyword::Let,
            "if" => Keyword::If,
            "else" => Keyword::Else,
            "while" => Keyword::While,
            "repeat" => Keyword::Repeat,
            "break" => Keyword::Break,
            "continue" => Keyword::Continue,
            "return" => Keyword::Return,
            "work" => Keyword::Work,
            "fence" => Keyword::Fence,
            "assert" => Keyword::Assert,
            _ => return None,
        })
    }

    fn text(self) -> &'static str {
        match self {
            Keyword::Let => "let",
            Keyword::If => "if",
            Keyword::Else => "else",
            Keyword::While => "while",
            Keyword::Repeat => "repeat",
            Keyword::Break => "break",
            Keyword::Continue => "continue",
            Keyword::Return => "return",
            Keyword::Work => "work",
            Keyword::Fence => "fence",
            Keyword::Assert => "assert",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sym {
    OrOr,
    AndAnd,
    Pipe,
    Caret,
    Amp,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    Tilde,
    Assign,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Semi,
}

impl Sym {
    fn text(self) -> &'static str {
        match self {
            Sym::OrOr => "||",
            Sym::AndAnd => "&&",
            Sym::Pipe => "|",
            Sym::Caret => "^",
            Sym::Amp => "&",
            Sym::EqEq => "==",
            Sym::NotEq => "!=",
            Sym::Lt => "<",
            Sym::Le => "<=",
            Sym::Gt => ">",
            Sym::Ge => ">=",
            Sym::Shl => "<<",
            Sym::Shr => ">>",
            Sym::Plus => "+",
            Sym::Minus => "-",
            Sym::Star => "*",
            Sym::Slash => "/",
            Sym::Percent => "%",
            Sym::Bang => "!",
            Sym::Tilde => "~",
            Sym::Assign => "=",
            Sym::LParen => "(",
            Sym::RParen => ")",
            Sym::LBracket => "[",
            Sym::RBracket => "]",
            Sym::LBrace => "{",
            Sym::RBrace => "}",
            Sym::Dot => ".",
            Sym::Comma => ",",
            Sym::Semi => ";",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// An integer literal whose value fits in a `u64`; `text` is as written.
    Int {
        value: u64,
        text: String,
    },
    Ident(String),
    Kw(Keyword),
    Sym(Sym),
    Newline,
    /// End of the script; always the last token unless an error comes first.
    Eof,
    /// A lexical error; when present it is the last token.
    Error(String),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    pos: SourcePos,
}

/// How a found token is named in error messages.
fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Int { text, .. } => format!("`{text}`"),
        Tok::Ident(name) => format!("`{name}`"),
        Tok::Kw(kw) => format!("`{}`", kw.text()),
        Tok::Sym(sym) => format!("`{}`", sym.text()),
        Tok::Newline => "a newline".to_string(),
        Tok::Eof => "end of script".to_string(),
        Tok::Error(message) => message.clone(),
    }
}

/// How an expression that is in the wrong place is named in error messages.
fn describe_expr(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Int(v) => format!("`{v}`"),
        ExprKind::Var(name) => format!("`{name}`"),
        ExprKind::Call(name, _) => format!("a call of `{name}`"),
        ExprKind::Atomic(op, _, _) => format!("a call of `{}`", op.name()),
        ExprKind::Load(place) => format!("`{}`", place_shape(place)),
        ExprKind::AddressOf(place) => format!("`&{}`", place_shape(place)),
        ExprKind::Unary(..) | ExprKind::Binary(..) => "an expression".to_string(),
    }
}

/// `inst.field`, `inst[..].field`, `inst.field[..]` or `inst[..].field[..]`,
/// the field being a path (`inst.items[..].next`).
pub(crate) fn place_shape(place: &Place) -> String {
    if place.pointer.is_some() {
        return "*..".to_string();
    }
    let mut out = place.instance.clone();
    if place.element.is_some() {
        out.push_str("[..]");
    }
    for (n, segment) in place.field.split('.').enumerate() {
        out.push('.');
        out.push_str(segment);
        if place.field_index.is_some() && n as u32 + 1 == place.index_after_segments {
            out.push_str("[..]");
        }
    }
    out
}

/// Shows a character inside backticks: printable ones as themselves, others
/// (controls, unusual whitespace) as a `\u{..}` escape.
fn show_char(c: char) -> String {
    if c.is_control() || (c.is_whitespace() && c != ' ') {
        format!("\\u{{{:x}}}", c as u32)
    } else {
        c.to_string()
    }
}

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

fn lex(source: &str) -> Vec<Token> {
    let mut lexer = Lexer {
        chars: source.chars().collect(),
        i: 0,
        line: 1,
        column: 1,
        tokens: Vec::new(),
    };
    lexer.run();
    lexer.tokens
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: u32,
    column: u32,
    tokens: Vec<Token>,
}

impl Lexer {
    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.i.saturating_add(k)).copied()
    }

    fn pos(&self) -> SourcePos {
        SourcePos {
            line: self.line,
            column: self.column,
        }
    }

    fn advance(&mut self) {
        if let Some(&c) = self.chars.get(self.i) {
            self.i += 1;
            if c == '\n' {
                self.line = self.line.saturating_add(1);
                self.column = 1;
            } else {
                self.column = self.column.saturating_add(1);
            }
        }
    }

    fn push(&mut self, tok: Tok, pos: SourcePos) {
        self.tokens.push(Token { tok, pos });
    }

    fn run(&mut self) {
        while let Some(c) = self.peek_at(0) {
            let pos = self.pos();
            match c {
                ' ' | '\t' | '\r' => self.advance(),
                '\n' => {
                    self.advance();
                    self.push(Tok::Newline, pos);
                }
                '#' => self.skip_comment(),
                '/' if self.peek_at(1) == Some('/') => self.skip_comment(),
                '0'..='9' => {
                    if let Err(message) = self.number(pos) {
                        self.push(Tok::Error(message), pos);
                        return;
                    }
                }
                'a'..='z' | 'A'..='Z' | '_' => self.ident(pos),
                _ => match self.symbol(c) {
                    Some(sym) => self.push(Tok::Sym(sym), pos),
                    None => {
                        let message = format!("unexpected character `{}`", show_char(c));
                        self.push(Tok::Error(message), pos);
                        return;
                    }
                },
            }
        }
        let pos = self.pos();
        self.push(Tok::Eof, pos);
    }

    /// Skips to the end of the line, leaving the newline itself.
    fn skip_comment(&mut self) {
        while let Some(c) = self.peek_at(0) {
            if c == '\n' {
                break;
            }
            self.advance();
        }
    }

    fn ident(&mut self, pos: SourcePos) {
        let mut text = String::new();
        while let Some(c) = self.peek_at(0) {
            if !(c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            text.push(c);
            self.advance();
        }
        let tok = match Keyword::from_ident(&text) {
            Some(kw) => Tok::Kw(kw),
            None => Tok::Ident(text),
        };
        self.push(tok, pos);
    }

    fn number(&mut self, pos: SourcePos) -> Result<(), String> {
        let mut text = String::new();
        while let Some(c) = self.peek_at(0) {
            if !(c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            text.push(c);
            self.advance();
        }
        if self.peek_at(0) == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            return Err(format!(
                "`{text}.` starts a fractional number; scripts have 64-bit integers only"
            ));
        }
        let value = int_value(&text)?;
        self.push(Tok::Int { value, text }, pos);
        Ok(())
    }

    fn symbol(&mut self, c: char) -> Option<Sym> {
        let next = self.peek_at(1);
        let (sym, len) = match (c, next) {
            ('|', Some('|')) => (Sym::OrOr, 2),
            ('&', Some('&')) => (Sym::AndAnd, 2),
            ('=', Some('=')) => (Sym::EqEq, 2),
            ('!', Some('=')) => (Sym::NotEq, 2),
            ('<', Some('=')) => (Sym::Le, 2),
            ('>', Some('=')) => (Sym::Ge, 2),
            ('<', Some('<')) => (Sym::Shl, 2),
            ('>', Some('>')) => (Sym::Shr, 2),
            ('|', _) => (Sym::Pipe, 1),
            ('^', _) => (Sym::Caret, 1),
            ('&', _) => (Sym::Amp, 1),
            ('<', _) => (Sym::Lt, 1),
            ('>', _) => (Sym::Gt, 1),
            ('+', _) => (Sym::Plus, 1),
            ('-', _) => (Sym::Minus, 1),
            ('*', _) => (Sym::Star, 1),
            ('/', _) => (Sym::Slash, 1),
            ('%', _) => (Sym::Percent, 1),
            ('!', _) => (Sym::Bang, 1),
            ('~', _) => (Sym::Tilde, 1),
            ('=', _) => (Sym::Assign, 1),
            ('(', _) => (Sym::LParen, 1),
            (')', _) => (Sym::RParen, 1),
            ('[', _) => (Sym::LBracket, 1),
            (']', _) => (Sym::RBracket, 1),
            ('{', _) => (Sym::LBrace, 1),
            ('}', _) => (Sym::RBrace, 1),
            ('.', _) => (Sym::Dot, 1),
            (',', _) => (Sym::Comma, 1),
            (';', _) => (Sym::Semi, 1),
            _ => return None,
        };
        for _ in 0..len {
            self.advance();
        }
        Some(sym)
    }
}

/// The value of an integer literal as written (`42`, `1_000`, `0x40`,
/// `0b101`), if it fits in a `u64`. Whether it fits in an `i64` is checked by
/// the parser, which knows whether a `-` comes before it.
fn int_value(text: &str) -> Result<u64, String> {
    let (radix, digits, kind) =
        if let Some(rest) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (16, rest, "hexadecimal")
        } else if let Some(rest) = text.strip_prefix("0b").or_else(|| text.strip_prefix("0B")) {
            (2, rest, "binary")
        } else {
            (10, text, "decimal")
        };
    let mut value: Option<u64> = Some(0);
    let mut any_digit = false;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let Some(d) = c.to_digit(radix) else {
            return Err(format!(
                "invalid digit `{c}` in {kind} integer literal `{text}`"
            ));
        };
        any_digit = true;
        value = value
            .and_then(|v| v.checked_mul(u64::from(radix)))
            .and_then(|v| v.checked_add(u64::from(d)));
    }
    if !any_digit {
        return Err(format!("integer literal `{text}` has no digits"));
    }
    value.ok_or_else(|| too_big(text))
}

fn too_big(text: &str) -> String {
    format!("integer literal `{text}` does not fit in 64 bits")
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

struct Parser {
    /// Never empty: ends with `Eof` or `Error`, which are never consumed.
    tokens: Vec<Token>,
    idx: usize,
    /// Open `(` and `[`: while non-zero, newlines are skipped.
    group_depth: usize,
    /// Current nesting, checked against [`MAX_NESTING_DEPTH`].
    depth: usize,
}

type StmtParser = fn(&mut Parser) -> Result<StmtKind, ParseError>;
type ExprParser = fn(&mut Parser) -> Result<Expr, ParseError>;

fn binary_op(tok: &Tok) -> Option<(BinaryOp, u8)> {
    let Tok::Sym(sym) = tok else {
        return None;
    };
    Some(match sym {
        Sym::OrOr => (BinaryOp::Or, 1),
        Sym::AndAnd => (BinaryOp::And, 2),
        Sym::Pipe => (BinaryOp::BitOr, 3),
        Sym::Caret => (BinaryOp::BitXor, 4),
        Sym::Amp => (BinaryOp::BitAnd, 5),
        Sym::EqEq => (BinaryOp::Eq, 6),
        Sym::NotEq => (BinaryOp::Ne, 6),
        Sym::Lt => (BinaryOp::Lt, 7),
        Sym::Le => (BinaryOp::Le, 7),
        Sym::Gt => (BinaryOp::Gt, 7),
        Sym::Ge => (BinaryOp::Ge, 7),
        Sym::Shl => (BinaryOp::Shl, 8),
        Sym::Shr => (BinaryOp::Shr, 8),
        Sym::Plus => (BinaryOp::Add, 9),
        Sym::Minus => (BinaryOp::Sub, 9),
        Sym::Star => (BinaryOp::Mul, 10),
        Sym::Slash => (BinaryOp::Div, 10),
        Sym::Percent => (BinaryOp::Rem, 10),
        _ => return None,
    })
}

fn can_start_expr(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Int { .. }
            | Tok::Ident(_)
            | Tok::Sym(Sym::LParen | Sym::Minus | Sym::Bang | Sym::Tilde | Sym::Amp | Sym::Star)
    )
}

/// An error whose message is only built when it happens (keeps the frames of
/// the recursive functions small).
#[cold]
#[inline(never)]
fn error_with(pos: SourcePos, message: impl FnOnce() -> String) -> ParseError {
    error(pos, message())
}

/// Checks the arguments of a parsed call `name(args)` at `pos` and builds a
/// `Call`, or an `Atomic` when `name` is one.
#[inline(never)]
fn finish_call(
    name: String,
    pos: SourcePos,
    args: Vec<Expr>,
    first_arg_pos: SourcePos,
) -> Result<Expr, ParseError> {
    let Some(op) = AtomicOp::from_name(&name) else {
        return Ok(Expr {
            kind: ExprKind::Call(name, args),
            pos,
        });
    };
    let values = op.operand_count();
    if args.len() != values + 1 {
        return Err(error(
            pos,
            format!(
                "`{name}` takes a place and {values} value{}, found {} argument{}",
                if values == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    let mut args = args.into_iter();
    let first = args.next().map(|e| e.kind);
    match first {
        Some(ExprKind::Load(place)) => Ok(Expr {
            kind: ExprKind::Atomic(op, place, args.collect()),
            pos,
        }),
        other => {
            let found = match other {
                Some(kind) => describe_expr(&Expr {
                    kind,
                    pos: first_arg_pos,
                }),
                None => "nothing".to_string(),
            };
            Err(error(
                first_arg_pos,
                format!(
                    "the first argument of `{name}` must be a field such as `inst.field`, \
                     found {found}"
                ),
            ))
        }
    }
}

impl Parser {
    fn last(&self) -> usize {
        self.tokens.len().saturating_sub(1)
    }

    fn skip_newlines(&mut self) {
        while self.idx < self.last() && self.tokens[self.idx].tok == Tok::Newline {
            self.idx += 1;
        }
    }

    /// The current token; inside `(...)` and `[...]` newlines are skipped.
    fn peek(&mut self) -> &Token {
        if self.group_depth > 0 {
            self.skip_newlines();
        }
        let i = self.idx.min(self.last());
        &self.tokens[i]
    }

    fn peek_tok(&mut self) -> &Tok {
        &self.peek().tok
    }

    fn peek_pos(&mut self) -> SourcePos {
        self.peek().pos
    }

    fn at_sym(&mut self, sym: Sym) -> bool {
        matches!(self.peek_tok(), Tok::Sym(s) if *s == sym)
    }

    /// Consumes the current token (but never the final `Eof` or `Error`) and
    /// returns its position.
    fn advance(&mut self) -> SourcePos {
        let pos = self.peek_pos();
        if self.idx < self.last() {
            self.idx += 1;
        }
        pos
    }

    fn enter(&mut self, pos: SourcePos) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_NESTING_DEPTH {
            return Err(error_with(pos, || {
                format!(
                    "nesting is too deep: more than {MAX_NESTING_DEPTH} levels of blocks, \
                     parentheses and operators"
                )
            }));
        }
        Ok(())
    }

    /// [`Parser::enter`] for a binary operator: each makes the expression
    /// one level deeper (a chain `a + b + c` nests to the left), which the
    /// error says, so that a long flat chain is not called nesting.
    fn enter_operator(&mut self, pos: SourcePos) -> Result<(), ParseError> {
        if self.depth + 1 > MAX_NESTING_DEPTH {
            return Err(error_with(pos, || {
                format!(
                    "this expression is too deep: more than {MAX_NESTING_DEPTH} levels of \
                     blocks, parentheses and operators, each operator of a chain such as \
                     `a + b + c` counting one; split it with a local (`let s = a + b`, then \
                     `s + c`)"
                )
            }));
        }
        self.enter(pos)
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // -- errors -------------------------------------------------------------

    /// "expected {expected}, found {current token}", or the lexer's error when
    /// the current token is one.
    #[cold]
    #[inline(never)]
    fn unexpected(&mut self, expected: &str) -> ParseError {
        let token = self.peek();
        match &token.tok {
            Tok::Error(message) => error(token.pos, message.clone()),
            other => error(
                token.pos,
                format!("expected {expected}, found {}", describe(other)),
            ),
        }
    }

    #[cold]
    #[inline(never)]
    fn unexpected_with(&mut self, expected: impl FnOnce() -> String) -> ParseError {
        self.unexpected(&expected())
    }

    /// Like [`Parser::unexpected`] after a complete expression, where a `=`
    /// is most likely a comparison written with one `=`.
    #[cold]
    #[inline(never)]
    fn unexpected_after_expr(&mut self, expected: &str) -> ParseError {
        if self.at_sym(Sym::Assign) {
            let pos = self.peek_pos();
            return error(pos, "`=` assigns; to compare use `==`");
        }
        self.unexpected(expected)
    }

    #[cold]
    #[inline(never)]
    fn unexpected_after_expr_with(&mut self, expected: impl FnOnce() -> String) -> ParseError {
        self.unexpected_after_expr(&expected())
    }

    /// The closing `close` of the `opener` at `open` is missing.
    #[cold]
    #[inline(never)]
    fn unclosed(&mut self, close: &str, opener: &str, open: SourcePos) -> ParseError {
        self.unexpected_after_expr(&format!(
            "{close} to close the {opener} at line {}, column {}",
            open.line, open.column
        ))
    }

    /// At a `}` or the end of the script, when it does not end the block.
    #[cold]
    #[inline(never)]
    fn block_end_error(&mut self, open: Option<SourcePos>) -> ParseError {
        let pos = self.peek_pos();
        match open {
            Some(open) => error(
                pos,
                format!(
                    "expected `}}` to close the block opened at line {}, column {}, \
                     found end of script",
                    open.line, open.column
                ),
            ),
            None => error(pos, "unexpected `}`: there is no open block to close"),
        }
    }

    #[cold]
    #[inline(never)]
    fn statement_end_error(&mut self, in_block: bool) -> ParseError {
        self.unexpected_after_expr(if in_block {
            "a newline, `;` or `}` after the statement"
        } else {
            "a newline or `;` after the statement"
        })
    }

    /// The error for a binary operator `sym` at `pos` not followed by an
    /// operand; `x += 1` and the like get a hint.
    #[cold]
    #[inline(never)]
    fn missing_operand(&mut self, sym: Sym, pos: SourcePos) -> ParseError {
        let s = sym.text();
        let next = self.peek_pos();
        let adjacent =
            next.line == pos.line && pos.column.checked_add(s.len() as u32) == Some(next.column);
        let compound = matches!(
            sym,
            Sym::Plus
                | Sym::Minus
                | Sym::Star
                | Sym::Slash
                | Sym::Percent
                | Sym::Amp
                | Sym::Pipe
                | Sym::Caret
                | Sym::Shl
                | Sym::Shr
        );
        if adjacent && compound && self.at_sym(Sym::Assign) {
            return error(
                pos,
                format!(
                    "`{s}=` is not supported; write `name = name {s} value` \
                     or `inst.field = inst.field {s} value`"
                ),
            );
        }
        self.unexpected(&format!("an expression after `{s}`"))
    }

    #[cold]
    #[inline(never)]
    fn place_shape_error(&mut self, place: &Place) -> ParseError {
        let pos = self.peek_pos();
        let found = describe(self.peek_tok());
        error(
            pos,
            format!(
                "unexpected {found} after `{}`: a place is `inst.field`, `inst[i].field`, \
                 `inst.field[j]` or `inst[i].field[j]`, a field being a name or a path \
                 with one index at most (`inst.items[j].next`)",
                place_shape(place)
            ),
        )
    }

    // -- statements ---------------------------------------------------------

    /// Statements up to the `}` of the block opened at `open` (left for the
    /// caller to consume), or up to the end of the script when `open` is None.
    fn parse_stmts(&mut self, open: Option<SourcePos>) -> Result<Block, ParseError> {
        let mut stmts = Vec::new();
        loop {
            while self.idx < self.last() && matches!(self.tokens[self.idx].tok, Tok::Newline) {
                self.idx += 1;
            }
            // `;` ends a statement, as a line break does; one with no
            // statement before it is a mistake, not an empty statement.
            if matches!(self.peek_tok(), Tok::Sym(Sym::Semi)) {
                return Err(error(
                    self.peek_pos(),
                    "stray `;`: a `;` ends the statement before it (as a line break does), and \
                     there is none here; remove it",
                ));
            }
            match (self.peek_tok(), open) {
                (Tok::Sym(Sym::RBrace), Some(_)) | (Tok::Eof, None) => return Ok(stmts),
                (Tok::Sym(Sym::RBrace) | Tok::Eof, _) => return Err(self.block_end_error(open)),
                _ => {}
            }
            let stmt = self.parse_stmt()?;
            stmts.push(stmt);
            if !matches!(
                self.peek_tok(),
                Tok::Newline | Tok::Eof | Tok::Sym(Sym::Semi | Sym::RBrace)
            ) {
                return Err(self.statement_end_error(open.is_some()));
            }
            if matches!(self.peek_tok(), Tok::Sym(Sym::Semi)) {
                self.advance();
            }
        }
    }

    fn parse_stmt(&mut self) -> Result<Stmt, ParseError> {
        let pos = self.peek_pos();
        let parse: StmtParser = match self.peek_tok() {
            Tok::Kw(Keyword::Else) => {
                let after_semi = self.idx > 0
                    && self.tokens[..self.idx]
                        .iter()
                        .rev()
                        .find(|t| !matches!(t.tok, Tok::Newline))
                        .is_some_and(|t| matches!(t.tok, Tok::Sym(Sym::Semi)));
                return Err(error(
                    pos,
                    if after_semi {
                        "`else` must follow the `}` of an `if` block; a `;` ends the `if` \
                         statement before it, so remove that `;`"
                    } else {
                        "`else` must follow the `}` of an `if` block"
                    },
                ));
            }
            Tok::Kw(kw) => {
                let parse = keyword_parser(*kw);
                self.advance();
                parse
            }
            tok if can_start_expr(tok) => Parser::parse_expr_stmt,
            _ => return Err(self.unexpected("a statement")),
        };
        let kind = parse(self)?;
        Ok(Stmt { kind, pos })
    }

    fn parse_let(&mut self) -> Result<StmtKind, ParseError> {
        let Tok::Ident(name) = self.peek_tok() else {
            return Err(self.unexpected("a name after `let`"));
        };
        let name = name.clone();
        self.advance();
        if !self.at_sym(Sym::Assign) {
            return Err(self.unexpected_with(|| format!("`=` after `let {name}`")));
        }
        self.advance();
        self.skip_newlines();
        let value = self.parse_expr_after("an expression after `=`")?;
        Ok(StmtKind::Let { name, value })
    }

    fn parse_while(&mut self) -> Result<StmtKind, ParseError> {
        let cond = self.parse_expr_after("a condition after `while`")?;
        let body = self.parse_braced("`{` after the condition of `while`")?;
        Ok(StmtKind::While { cond, body })
    }

    fn parse_repeat(&mut self) -> Result<StmtKind, ParseError> {
        let count = self.parse_expr_after("a count after `repeat`")?;
        let body = self.parse_braced("`{` after the count of `repeat`")?;
        Ok(StmtKind::Repeat { count, body })
    }

    fn parse_return(&mut self) -> Result<StmtKind, ParseError> {
        if matches!(
            self.peek_tok(),
            Tok::Newline | Tok::Eof | Tok::Sym(Sym::Semi | Sym::RBrace)
        ) {
            return Ok(StmtKind::Return(None));
        }
        let value = self.parse_expr_after("an expression after `return`")?;
        Ok(StmtKind::Return(Some(value)))
    }

    fn parse_work(&mut self) -> Result<StmtKind, ParseError> {
        let cycles = self.parse_expr_after("a cycle count after `work`")?;
        Ok(StmtKind::Work(cycles))
    }

    fn parse_assert(&mut self) -> Result<StmtKind, ParseError> {
        let cond = self.parse_expr_after("a condition after `assert`")?;
        Ok(StmtKind::Assert(cond))
    }

    /// `cond { ... } [else ...]` after a consumed `if`.
    fn parse_if(&mut self) -> Result<StmtKind, ParseError> {
        let cond = self.parse_expr_after("a condition after `if`")?;
        let then_block = self.parse_braced("`{` after the condition of `if`")?;
        let else_block = self.parse_else()?;
        Ok(StmtKind::If {
            cond,
            then_block,
            else_block,
        })
    }

    /// An optional `else { ... }` or `else if ...`, which may be on the line
    /// after the `}`.
    fn parse_else(&mut self) -> Result<Option<Block>, ParseError> {
        let save = self.idx;
        self.skip_newlines();
        if !matches!(self.peek_tok(), Tok::Kw(Keyword::Else)) {
            self.idx = save;
            return Ok(None);
        }
        self.advance();
        self.skip_newlines();
        match self.peek_tok() {
            Tok::Kw(Keyword::If) => {}
            Tok::Sym(Sym::LBrace) => return self.parse_braced("`{` after `else`").map(Some),
            _ => return Err(self.unexpected("`{` or `if` after `else`")),
        }
        let pos = self.advance();
        self.enter(pos)?;
        let kind = self.parse_if()?;
        self.leave();
        Ok(Some(vec![Stmt { kind, pos }]))
    }

    /// `{ stmts }`, possibly on the next line; `expected` names the `{` in the
    /// error when it is missing.
    fn parse_braced(&mut self, expected: &str) -> Result<Block, ParseError> {
        self.skip_newlines();
        if !self.at_sym(Sym::LBrace) {
            return Err(self.unexpected_after_expr(expected));
        }
        let open = self.advance();
        self.enter(open)?;
        let body = self.parse_stmts(Some(open))?;
        self.leave();
        self.advance(); // the `}`
        Ok(body)
    }

    /// An expression statement, an assignment of a local or a store.
    fn parse_expr_stmt(&mut self) -> Result<StmtKind, ParseError> {
        let target = self.parse_expr()?;
        if !self.at_sym(Sym::Assign) {
            return Ok(StmtKind::Expr(target));
        }
        if !matches!(target.kind, ExprKind::Var(_) | ExprKind::Load(_)) {
            return Err(error_with(target.pos, || {
                format!(
                    "the left side of `=` must be a local or a field such as `inst.field`, \
                     found {}",
                    describe_expr(&target)
                )
            }));
        }
        self.advance();
        self.skip_newlines();
        let value = self.parse_expr_after("an expression after `=`")?;
        Ok(match target.kind {
            ExprKind::Load(place) => StmtKind::Store { place, value },
            ExprKind::Var(name) => StmtKind::Assign { name, value },
            _ => StmtKind::Expr(value), // excluded above
        })
    }

    // -- expressions --------------------------------------------------------

    fn parse_expr(&mut self) -> Result<Expr, ParseError> {
        self.parse_binary(1)
    }

    /// An expression, or "expected {what}, found ..." when none starts here.
    fn parse_expr_after(&mut self, what: &str) -> Result<Expr, ParseError> {
        if !can_start_expr(self.peek_tok()) {
            return Err(self.unexpected(what));
        }
        self.parse_expr()
    }

    /// The binary operator at the current token, if its precedence is at
    /// least `min_prec`.
    fn peek_binary_op(&mut self, min_prec: u8) -> Option<(BinaryOp, u8, Sym)> {
        let tok = self.peek_tok();
        let (op, prec) = binary_op(tok)?;
        let Tok::Sym(sym) = *tok else {
            return None;
        };
        (prec >= min_prec).then_some((op, prec, sym))
    }

    /// Precedence climbing over operators of precedence `min_prec` and up.
    /// Every operator counts one nesting level (the tree grows one level).
    fn parse_binary(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        let base = self.depth;
        let mut left = self.parse_unary()?;
        while let Some((op, prec, sym)) = self.peek_binary_op(min_prec) {
            let pos = self.advance();
            self.skip_newlines();
            self.enter_operator(pos)?;
            if !can_start_expr(self.peek_tok()) {
                return Err(self.missing_operand(sym, pos));
            }
            let right = self.parse_binary(prec + 1)?;
            left = Expr {
                kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                pos,
            };
        }
        self.depth = base;
        Ok(left)
    }

    fn parse_unary(&mut self) -> Result<Expr, ParseError> {
        let (op, text) = match self.peek_tok() {
            Tok::Sym(Sym::Amp) => return self.parse_address_of(),
            Tok::Sym(Sym::Star) => return self.parse_deref(),
            Tok::Sym(Sym::Minus) => (UnaryOp::Neg, "-"),
            Tok::Sym(Sym::Bang) => (UnaryOp::Not, "!"),
            Tok::Sym(Sym::Tilde) => (UnaryOp::BitNot, "~"),
            _ => return self.parse_primary(),
        };
        let pos = self.advance();
        if op == UnaryOp::Neg && matches!(self.peek_tok(), Tok::Int { .. }) {
            return self.parse_negative_literal(pos);
        }
        self.enter(pos)?;
        if !can_start_expr(self.peek_tok()) {
            return Err(self.unexpected_with(|| format!("an expression after `{text}`")));
        }
        let operand = self.parse_unary()?;
        self.leave();
        Ok(Expr {
            kind: ExprKind::Unary(op, Box::new(operand)),
            pos,
        })
    }

    /// `&place`: a pointer to a field.
    fn parse_address_of(&mut self) -> Result<Expr, ParseError> {
        let pos = self.advance();
        self.enter(pos)?;
        if !can_start_expr(self.peek_tok()) {
            return Err(self.unexpected("a field after `&`, such as `&inst.field`"));
        }
        let operand = self.parse_unary()?;
        self.leave();
        match operand.kind {
            ExprKind::Load(place) => Ok(Expr {
                kind: ExprKind::AddressOf(place),
                pos,
            }),
            _ => Err(error_with(operand.pos, || {
                format!(
                    "`&` takes a field such as `&inst.field`, found {}",
                    describe_expr(&operand)
                )
            })),
        }
    }

    /// `*expr`: the field a pointer points to, as a place (loaded in an
    /// expression, stored to on the left of `=`, or given to an atomic).
    fn parse_deref(&mut self) -> Result<Expr, ParseError> {
        let pos = self.advance();
        self.enter(pos)?;
        if !can_start_expr(self.peek_tok()) {
            return Err(self.unexpected("a pointer after `*`"));
        }
        let pointer = self.parse_unary()?;
        self.leave();
        Ok(Expr {
            kind: ExprKind::Load(Place {
                pointer: Some(Box::new(pointer)),
                instance: String::new(),
                element: None,
                field: String::new(),
                field_index: None,
                index_after_segments: 0,
                pos,
            }),
            pos,
        })
    }

    /// `-<literal>` folded into one literal (so that `-9223372036854775808`
    /// is expressible); the `-` at `pos` is consumed.
    fn parse_negative_literal(&mut self, pos: SourcePos) -> Result<Expr, ParseError> {
        let literal_pos = self.peek_pos();
        let Tok::Int { value, text } = self.peek_tok() else {
            return Err(self.unexpected("an integer"));
        };
        if *value > 1u64 << 63 {
            return Err(error(literal_pos, too_big(text)));
        }
        let value = (*value as i64).wrapping_neg();
        self.advance();
        Ok(Expr {
            kind: ExprKind::Int(value),
            pos,
        })
    }

    fn parse_primary(&mut self) -> Result<Expr, ParseError> {
        let parse: ExprParser = match self.peek_tok() {
            Tok::Int { .. } => Parser::parse_int,
            Tok::Sym(Sym::LParen) => Parser::parse_paren,
            Tok::Ident(_) => Parser::parse_name,
            _ => return Err(self.unexpected("an expression")),
        };
        parse(self)
    }

    fn parse_int(&mut self) -> Result<Expr, ParseError> {
        let pos = self.peek_pos();
        let Tok::Int { value, text } = self.peek_tok() else {
            return Err(self.unexpected("an integer"));
        };
        let Ok(value) = i64::try_from(*value) else {
            return Err(error(pos, too_big(text)));
        };
        self.advance();
        Ok(Expr {
            kind: ExprKind::Int(value),
            pos,
        })
    }

    fn parse_paren(&mut self) -> Result<Expr, ParseError> {
        let open = self.advance();
        self.enter(open)?;
        self.group_depth += 1;
        let inner = self.parse_expr_after("an expression after `(`")?;
        if !self.at_sym(Sym::RParen) {
            return Err(self.unclosed("`)`", "`(`", open));
        }
        self.group_depth -= 1;
        self.advance();
        self.leave();
        Ok(inner)
    }

    /// A local, a call, an atomic or a load.
    fn parse_name(&mut self) -> Result<Expr, ParseError> {
        let pos = self.peek_pos();
        let Tok::Ident(name) = self.peek_tok() else {
            return Err(self.unexpected("a name"));
        };
        let name = name.clone();
        self.advance();
        match self.peek_tok() {
            Tok::Sym(Sym::LParen) => self.parse_call(name, pos),
            Tok::Sym(Sym::Dot | Sym::LBracket) => {
                let place = self.parse_place(name, pos)?;
                Ok(Expr {
                    kind: ExprKind::Load(place),
                    pos,
                })
            }
            _ => Ok(Expr {
                kind: ExprKind::Var(name),
                pos,
            }),
        }
    }

    /// `(args)` after the name `name` (at `pos`): a call or an atomic.
    fn parse_call(&mut self, name: String, pos: SourcePos) -> Result<Expr, ParseError> {
        let open = self.advance();
        self.enter(open)?;
        self.group_depth += 1;
        let mut args = Vec::new();
        let mut first_arg_pos = open;
        while !self.at_sym(Sym::RParen) {
            if args.is_empty() {
                first_arg_pos = self.peek_pos();
            }
            if !can_start_expr(self.peek_tok()) {
                return Err(self.unexpected_with(|| format!("an argument of `{name}` or `)`")));
            }
            let arg = self.parse_expr()?;
            args.push(arg);
            if self.at_sym(Sym::Comma) {
                self.advance();
            } else if !self.at_sym(Sym::RParen) {
                return Err(self.unexpected_after_expr_with(|| {
                    format!("`,` or `)` after an argument of `{name}`")
                }));
            }
        }
        self.group_depth -= 1;
        self.advance(); // the `)`
        self.leave();
        finish_call(name, pos, args, first_arg_pos)
    }

    /// `[EXPR].FIELD[EXPR]` after the instance name `instance` (at `pos`); the
    /// current token is `.` or `[`.
    fn parse_place(&mut self, instance: String, pos: SourcePos) -> Result<Place, ParseError> {
        let mut element = None;
        if self.at_sym(Sym::LBracket) {
            let open = self.peek_pos();
            element = Some(Box::new(self.parse_index()?));
            if !self.at_sym(Sym::Dot) {
                return Err(error_with(open, || {
                    format!("locals are not arrays; did you mean `{instance}[..].field`?")
                }));
            }
        }
        self.advance(); // the `.`
        let mut place = Place {
            pointer: None,
            instance,
            element,
            field: String::new(),
            field_index: None,
            index_after_segments: 0,
            pos,
        };
        let mut segments = 0u32;
        loop {
            let Tok::Ident(segment) = self.peek_tok() else {
                let written = if segments == 0 {
                    format!(
                        "{}{}",
                        place.instance,
                        if place.element.is_some() { "[..]" } else { "" }
                    )
                } else {
                    place_shape(&place)
                };
                return Err(self.unexpected_with(|| format!("a field name after `{written}.`")));
            };
            if segments > 0 {
                place.field.push('.');
            }
            place.field.push_str(segment);
            self.advance();
            segments += 1;
            if self.at_sym(Sym::LBracket) && place.field_index.is_none() {
                place.field_index = Some(Box::new(self.parse_index()?));
                place.index_after_segments = segments;
            }
            if !self.at_sym(Sym::Dot) {
                break;
            }
            self.advance(); // the `.`
        }
        if self.at_sym(Sym::LBracket) {
            return Err(self.place_shape_error(&place));
        }
        Ok(place)
    }

    /// `[ EXPR ]`, the current token being the `[`.
    fn parse_index(&mut self) -> Result<Expr, ParseError> {
        let open = self.advance();
        self.enter(open)?;
        self.group_depth += 1;
        let index = self.parse_expr_after("an index after `[`")?;
        if !self.at_sym(Sym::RBracket) {
            return Err(self.unclosed("`]`", "`[`", open));
        }
        self.group_depth -= 1;
        self.advance();
        self.leave();
        Ok(index)
    }
}

/// The function parsing the rest of a statement after its keyword.
fn keyword_parser(kw: Keyword) -> StmtParser {
    match kw {
        Keyword::Let => Parser::parse_let,
        Keyword::If => Parser::parse_if,
        Keyword::While => Parser::parse_while,
        Keyword::Repeat => Parser::parse_repeat,
        Keyword::Return => Parser::parse_return,
        Keyword::Work => Parser::parse_work,
        Keyword::Assert => Parser::parse_assert,
        Keyword::Break => |_| Ok(StmtKind::Break),
        Keyword::Continue => |_| Ok(StmtKind::Continue),
        Keyword::Fence => |_| Ok(StmtKind::Fence),
        // Rejected before the keyword is consumed.
        Keyword::Else => |p| Err(p.unexpected("a statement")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // -- a compact rendering of trees, so expectations stay readable --------

    fn place(p: &Place) -> String {
        let mut s = p.instance.clone();
        if let Some(e) = &p.element {
            s += &format!("[{}]", expr(e));
        }
        for (n, segment) in p.field.split('.').enumerate() {
            s += ".";
            s += segment;
            if let Some(i) = &p.field_index {
                if n as u32 + 1 == p.index_after_segments {
                    s += &format!("[{}]", expr(i));
                }
            }
        }
        s
    }

    fn list(items: &[Expr]) -> String {
        items.iter().map(|e| format!(" {}", expr(e))).collect()
    }

    fn expr(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Var(n) => n.clone(),
            ExprKind::Unary(op, x) => {
                let op = match op {
                    UnaryOp::Neg => "neg",
                    UnaryOp::Not => "not",
                    UnaryOp::BitNot => "bitnot",
                };
                format!("({op} {})", expr(x))
            }
            ExprKind::Binary(op, a, b) => format!("({} {} {})", op.symbol(), expr(a), expr(b)),
            ExprKind::Load(p) => place(p),
            ExprKind::Atomic(op, p, args) => format!("({} {}{})", op.name(), place(p), list(args)),
            ExprKind::AddressOf(p) => format!("(& {})", place(p)),
            ExprKind::Call(n, args) => format!("(call {n}{})", list(args)),
        }
    }

    fn block(b: &Block) -> String {
        let items: Vec<String> = b.iter().map(stmt).collect();
        format!("{{{}}}", items.join(" "))
    }

    fn stmt(s: &Stmt) -> String {
        match &s.kind {
            StmtKind::Let { name, value } => format!("(let {name} {})", expr(value)),
            StmtKind::Assign { name, value } => format!("(set {name} {})", expr(value)),
            StmtKind::Store { place: p, value } => format!("(store {} {})", place(p), expr(value)),
            StmtKind::Work(e) => format!("(work {})", expr(e)),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => match else_block {
                None => format!("(if {} {})", expr(cond), block(then_block)),
                Some(eb) => format!("(if {} {} {})", expr(cond), block(then_block), block(eb)),
            },
            StmtKind::While { cond, body } => format!("(while {} {})", expr(cond), block(body)),
            StmtKind::Repeat { count, body } => {
                format!("(repeat {} {})", expr(count), block(body))
            }
            StmtKind::Break => "break".into(),
            StmtKind::Continue => "continue".into(),
            StmtKind::Return(None) => "(return)".into(),
            StmtKind::Return(Some(e)) => format!("(return {})", expr(e)),
            StmtKind::Fence => "fence".into(),
            StmtKind::Assert(e) => format!("(assert {})", expr(e)),
            StmtKind::Expr(e) => format!("(expr {})", expr(e)),
        }
    }

    /// The script rendered, statements separated by spaces.
    fn p(src: &str) -> String {
        match parse_block(src) {
            Ok(b) => b.iter().map(stmt).collect::<Vec<_>>().join(" "),
            Err(e) => panic!("unexpected error for {src:?}: {e}"),
        }
    }

    /// The expression of `x = <src>` rendered.
    fn e(src: &str) -> String {
        let b = parse_block(&format!("x = {src}")).unwrap_or_else(|err| panic!("{src:?}: {err}"));
        assert_eq!(b.len(), 1, "{src:?}");
        match &b[0].kind {
            StmtKind::Assign { value, .. } => expr(value),
            other => panic!("not an assignment: {other:?}"),
        }
    }

    fn err(src: &str) -> (String, u32, u32) {
        match parse_block(src) {
            Ok(b) => panic!("expected an error for {src:?}, got {b:?}"),
            Err(e) => (e.message, e.pos.line, e.pos.column),
        }
    }

    fn check_err(src: &str, message: &str, line: u32, column: u32) {
        assert_eq!(
            err(src),
            (message.to_string(), line, column),
            "source: {src:?}"
        );
    }

    fn at(line: u32, column: u32) -> SourcePos {
        SourcePos { line, column }
    }

    // -- statements ---------------------------------------------------------

    #[test]
    fn empty_and_blank_scripts() {
        assert_eq!(parse_block(""), Ok(vec![]));
        assert_eq!(parse_block("\n\n  \t\n"), Ok(vec![]));
        // A `;` ends a statement; alone it is a stray one.
        assert_eq!(
            parse_block(";;;\n;").map_err(|e| e.message),
            Err("stray `;`: a `;` ends the statement before it (as a line break does), and there is none here; remove it".to_string())
        );
        assert_eq!(parse_block("# only a comment"), Ok(vec![]));
        assert_eq!(parse_block("// comment\n# another\n"), Ok(vec![]));
    }

    #[test]
    fn every_statement_kind() {
        assert_eq!(p("let x = 1"), "(let x 1)");
        assert_eq!(p("x = y"), "(set x y)");
        assert_eq!(p("lock.v = 1"), "(store lock.v 1)");
        assert_eq!(p("lock[c].v = 1"), "(store lock[c].v 1)");
        assert_eq!(p("lock.v[i] = 1"), "(store lock.v[i] 1)");
        assert_eq!(p("lock[c].v[i + 1] = 1"), "(store lock[c].v[(+ i 1)] 1)");
        assert_eq!(p("work 10"), "(work 10)");
        assert_eq!(p("fence"), "fence");
        assert_eq!(p("assert x == 1"), "(assert (== x 1))");
        assert_eq!(p("break"), "break");
        assert_eq!(p("continue"), "continue");
        assert_eq!(p("return"), "(return)");
        assert_eq!(p("return x + 1"), "(return (+ x 1))");
        assert_eq!(p("if x { y = 1 }"), "(if x {(set y 1)})");
        assert_eq!(
            p("if x { y = 1 } else { y = 2 }"),
            "(if x {(set y 1)} {(set y 2)})"
        );
        assert_eq!(
            p("while x < 3 { x = x + 1 }"),
            "(while (< x 3) {(set x (+ x 1))})"
        );
        assert_eq!(p("repeat 4 { work 1 }"), "(repeat 4 {(work 1)})");
        assert_eq!(p("unlock()"), "(expr (call unlock))");
        assert_eq!(p("f(1, x)"), "(expr (call f 1 x))");
        assert_eq!(p("fetch_add(ctr.v, 1)"), "(expr (fetch_add ctr.v 1))");
        assert_eq!(p("ctr.v"), "(expr ctr.v)");
        assert_eq!(p("x"), "(expr x)");
    }

    #[test]
    fn return_without_value() {
        assert_eq!(p("return\nx = 1"), "(return) (set x 1)");
        assert_eq!(p("return; x = 1"), "(return) (set x 1)");
        assert_eq!(p("if a { return }"), "(if a {(return)})");
        assert_eq!(p("if a {return}"), "(if a {(return)})");
        assert_eq!(p("return # done"), "(return)");
        assert_eq!(p("return -1"), "(return -1)");
    }

    #[test]
    fn all_atomics() {
        assert_eq!(p("fetch_sub(a.b, 2)"), "(expr (fetch_sub a.b 2))");
        assert_eq!(p("fetch_or(a.b, 2)"), "(expr (fetch_or a.b 2))");
        assert_eq!(p("fetch_and(a.b, 2)"), "(expr (fetch_and a.b 2))");
        assert_eq!(p("xchg(a[1].b, 2)"), "(expr (xchg a[1].b 2))");
        assert_eq!(
            p("let old = cmpxchg(lock.owner[i], 0, cpu() + 1)"),
            "(let old (cmpxchg lock.owner[i] 0 (+ (call cpu) 1)))"
        );
        // A parenthesised place is still a place; trailing comma allowed.
        assert_eq!(p("xchg((a.b), 1,)"), "(expr (xchg a.b 1))");
        // Atomic names are only special when called.
        assert_eq!(p("let xchg = 1"), "(let xchg 1)");
    }

    #[test]
    fn calls() {
        assert_eq!(e("cpu()"), "(call cpu)");
        assert_eq!(e("random(n)"), "(call random n)");
        assert_eq!(e("f(a.b, g(1), -2,)"), "(call f a.b (call g 1) -2)");
        check_err(
            "x = f(x)(1)",
            "expected a newline or `;` after the statement, found `(`",
            1,
            9,
        );
    }

    #[test]
    fn separators() {
        assert_eq!(p("x = 1; y = 2"), "(set x 1) (set y 2)");
        assert_eq!(p("x = 1; y = 2;"), "(set x 1) (set y 2)");
        assert_eq!(p("x = 1;\n y = 2;\n"), "(set x 1) (set y 2)");
        assert_eq!(p("\n\nx = 1\n\n\ny = 2\n\n"), "(set x 1) (set y 2)");
        assert_eq!(p("if a { x = 1; y = 2 }"), "(if a {(set x 1) (set y 2)})");
        assert_eq!(p("if a {\n\n x = 1\n\n}\n"), "(if a {(set x 1)})");
        assert_eq!(p("if a {}"), "(if a {})");
        assert_eq!(p("if a { x = 1; }"), "(if a {(set x 1)})");
        assert_eq!(
            p("while a { if b { break } }"),
            "(while a {(if b {break})})"
        );
        assert_eq!(p("x = 1\r\ny = 2\r\n"), "(set x 1) (set y 2)");
    }

    #[test]
    fn else_if_chains() {
        assert_eq!(
            p("if a { x = 1 } else if b { x = 2 } else if c { x = 3 } else { x = 4 }"),
            "(if a {(set x 1)} {(if b {(set x 2)} {(if c {(set x 3)} {(set x 4)})})})"
        );
        assert_eq!(
            p("if a {\n x = 1\n}\nelse if b {\n x = 2\n}\nelse {\n x = 3\n}"),
            "(if a {(set x 1)} {(if b {(set x 2)} {(set x 3)})})"
        );
        // `else` after blank lines and a comment.
        assert_eq!(
            p("if a { }\n\n# why\nelse { x = 1 }"),
            "(if a {} {(set x 1)})"
        );
        // No `else`: the following statement is unaffected.
        assert_eq!(p("if a { }\nx = 1"), "(if a {}) (set x 1)");
        // `{` on the line after the condition.
        assert_eq!(p("while a\n{\n}"), "(while a {})");
        assert_eq!(p("if a\n{ }\nelse\n{ x = 1 }"), "(if a {} {(set x 1)})");
    }

    #[test]
    fn else_if_positions() {
        let b = parse_block("if a {\n} else if b {\n}").unwrap();
        let StmtKind::If { else_block, .. } = &b[0].kind else {
            panic!()
        };
        let else_block = else_block.as_ref().unwrap();
        assert_eq!(else_block.len(), 1);
        assert_eq!(else_block[0].pos, at(2, 8));
    }

    // -- expressions --------------------------------------------------------

    #[test]
    fn precedence() {
        assert_eq!(e("1 + 2 * 3"), "(+ 1 (* 2 3))");
        assert_eq!(e("1 * 2 + 3"), "(+ (* 1 2) 3)");
        assert_eq!(e("(1 + 2) * 3"), "(* (+ 1 2) 3)");
        assert_eq!(
            e("a || b && c | d ^ f & g == h < i << j + k * l"),
            "(|| a (&& b (| c (^ d (& f (== g (< h (<< i (+ j (* k l))))))))))"
        );
        assert_eq!(
            e("a * b + c << d < f == g & h ^ i | j && k || l"),
            "(|| (&& (| (^ (& (== (< (<< (+ (* a b) c) d) f) g) h) i) j) k) l)"
        );
        assert_eq!(e("a != b == c"), "(== (!= a b) c)");
        assert_eq!(e("a <= b > c >= d"), "(>= (> (<= a b) c) d)");
        assert_eq!(e("a >> 1 << 2"), "(<< (>> a 1) 2)");
        assert_eq!(e("a % b / c * d"), "(* (/ (% a b) c) d)");
        assert_eq!(e("a == b < c"), "(== a (< b c))");
        assert_eq!(e("a & b == c"), "(& a (== b c))");
    }

    #[test]
    fn left_associativity() {
        assert_eq!(e("1 - 2 - 3"), "(- (- 1 2) 3)");
        assert_eq!(e("a / b / c"), "(/ (/ a b) c)");
        assert_eq!(e("a || b || c"), "(|| (|| a b) c)");
        assert_eq!(e("a && b && c"), "(&& (&& a b) c)");
        assert_eq!(e("a - (b - c)"), "(- a (- b c))");
    }

    #[test]
    fn unary_operators() {
        assert_eq!(e("-a"), "(neg a)");
        assert_eq!(e("!a && b"), "(&& (not a) b)");
        assert_eq!(e("~a & b"), "(& (bitnot a) b)");
        assert_eq!(e("-a * b"), "(* (neg a) b)");
        assert_eq!(e("- -a"), "(neg (neg a))");
        assert_eq!(e("!!a"), "(not (not a))");
        assert_eq!(e("-x.y"), "(neg x.y)");
        assert_eq!(e("-(1)"), "(neg 1)");
        assert_eq!(e("-f(1)"), "(neg (call f 1))");
        assert_eq!(e("a - -1"), "(- a -1)");
        assert_eq!(e("a--1"), "(- a -1)");
        assert_eq!(e("-2 * 3"), "(* -2 3)");
        assert_eq!(e("~0"), "(bitnot 0)");
    }

    #[test]
    fn places_and_loads() {
        assert_eq!(e("a.b"), "a.b");
        assert_eq!(e("a[c].b"), "a[c].b");
        assert_eq!(e("a.b[i]"), "a.b[i]");
        assert_eq!(e("a[c + 1].b[i * 2]"), "a[(+ c 1)].b[(* i 2)]");
        assert_eq!(e("a[b[1].c].d[e.f]"), "a[b[1].c].d[e.f]");
        assert_eq!(e("a.b + c.d[1]"), "(+ a.b c.d[1])");
        // Nested fields: a path, with the one index where it is written.
        assert_eq!(e("a.b.c"), "a.b.c");
        assert_eq!(e("a[1].b[i].c.d"), "a[1].b[i].c.d");
        assert_eq!(e("a.b.c[2]"), "a.b.c[2]");
        let b = parse_block("  q[1].f[2] = 3").unwrap();
        let StmtKind::Store { place: pl, value } = &b[0].kind else {
            panic!()
        };
        assert_eq!(pl.pos, at(1, 3));
        assert_eq!(pl.instance, "q");
        assert_eq!(pl.field, "f");
        assert_eq!(pl.element.as_ref().unwrap().kind, ExprKind::Int(1));
        assert_eq!(pl.field_index.as_ref().unwrap().kind, ExprKind::Int(2));
        assert_eq!(value.pos, at(1, 15));
    }

    #[test]
    fn literals() {
        assert_eq!(e("42"), "42");
        assert_eq!(e("1_000_000"), "1000000");
        assert_eq!(e("0x40"), "64");
        assert_eq!(e("0XfF"), "255");
        assert_eq!(e("0x_dead_BEEF"), "3735928559");
        assert_eq!(e("0b101"), "5");
        assert_eq!(e("0B1_0000"), "16");
        assert_eq!(e("007"), "7");
        assert_eq!(e("9223372036854775807"), i64::MAX.to_string());
        assert_eq!(e("0x7fff_ffff_ffff_ffff"), i64::MAX.to_string());
        assert_eq!(e("-9223372036854775808"), i64::MIN.to_string());
        assert_eq!(e("- 9223372036854775808"), i64::MIN.to_string());
        assert_eq!(e("-0x8000_0000_0000_0000"), i64::MIN.to_string());
        assert_eq!(e("-9223372036854775807"), (-i64::MAX).to_string());
        assert_eq!(e("-0"), "0");
    }

    #[test]
    fn i64_min_is_a_single_literal() {
        let b = parse_block("x = -9223372036854775808").unwrap();
        let StmtKind::Assign { value, .. } = &b[0].kind else {
            panic!()
        };
        assert_eq!(
            *value,
            Expr {
                kind: ExprKind::Int(i64::MIN),
                pos: at(1, 5)
            }
        );
    }

    #[test]
    fn newline_handling() {
        assert_eq!(p("x = 1 +\n 2"), "(set x (+ 1 2))");
        assert_eq!(p("x = a &&\n\n b ||\n c"), "(set x (|| (&& a b) c))");
        assert_eq!(p("x = (1\n + 2\n)"), "(set x (+ 1 2))");
        assert_eq!(p("f(1,\n 2)"), "(expr (call f 1 2))");
        assert_eq!(p("f(\n 1\n ,\n 2\n)"), "(expr (call f 1 2))");
        assert_eq!(p("x = a[\n1\n].b[\n2\n]"), "(set x a[1].b[2])");
        assert_eq!(p("let x =\n 5"), "(let x 5)");
        assert_eq!(p("a.b =\n 5"), "(store a.b 5)");
        assert_eq!(p("if (a\n || b) {\n}"), "(if (|| a b) {})");
        assert_eq!(p("x = (a.b\n[1])"), "(set x a.b[1])");
        // Outside brackets a newline ends the statement.
        assert_eq!(p("x = a\nb"), "(set x a) (expr b)");
        assert_eq!(p("x = a\n(b)"), "(set x a) (expr b)");
        assert_eq!(p("x = a\n-b"), "(set x a) (expr (neg b))");
    }

    #[test]
    fn comments() {
        assert_eq!(p("x = 1 # set x\ny = 2 // and y"), "(set x 1) (set y 2)");
        assert_eq!(p("# header\n// another\nx = 1"), "(set x 1)");
        assert_eq!(
            p("x = f(1, # first\n 2 // second\n)"),
            "(set x (call f 1 2))"
        );
        assert_eq!(p("x = 1 + # more\n 2"), "(set x (+ 1 2))");
        assert_eq!(p("x = 4 / 2 # é ü 漢字"), "(set x (/ 4 2))");
        assert_eq!(p("if a { # open\n} # close"), "(if a {})");
    }

    #[test]
    fn positions() {
        let b = parse_block("let x = 1\n  if x == 2 {\n    y = -x\n  }").unwrap();
        assert_eq!(b[0].pos, at(1, 1));
        assert_eq!(b[1].pos, at(2, 3));
        let StmtKind::If {
            cond, then_block, ..
        } = &b[1].kind
        else {
            panic!()
        };
        // A binary expression is at its operator.
        assert_eq!(cond.pos, at(2, 8));
        assert_eq!(then_block[0].pos, at(3, 5));
        let StmtKind::Assign { value, .. } = &then_block[0].kind else {
            panic!()
        };
        assert_eq!(value.pos, at(3, 9));
        let ExprKind::Unary(UnaryOp::Neg, inner) = &value.kind else {
            panic!()
        };
        assert_eq!(inner.pos, at(3, 10));

        let b = parse_block("\tfoo(1)\n").unwrap();
        assert_eq!(b[0].pos, at(1, 2));
        let StmtKind::Expr(call) = &b[0].kind else {
            panic!()
        };
        assert_eq!(call.pos, at(1, 2));
    }

    #[test]
    fn full_tree_equality() {
        let b = parse_block("ctr.v = fetch_add(c[i].n, 2) * k").unwrap();
        let expected = vec![Stmt {
            kind: StmtKind::Store {
                place: Place {
                    pointer: None,
                    instance: "ctr".into(),
                    element: None,
                    field: "v".into(),
                    field_index: None,
                    index_after_segments: 0,
                    pos: at(1, 1),
                },
                value: Expr {
                    kind: ExprKind::Binary(
                        BinaryOp::Mul,
                        Box::new(Expr {
                            kind: ExprKind::Atomic(
                                AtomicOp::FetchAdd,
                                Place {
                                    pointer: None,
                                    instance: "c".into(),
                                    element: Some(Box::new(Expr {
                                        kind: ExprKind::Var("i".into()),
                                        pos: at(1, 21),
                                    })),
                                    field: "n".into(),
                                    field_index: None,
                                    index_after_segments: 0,
                                    pos: at(1, 19),
                                },
                                vec![Expr {
                                    kind: ExprKind::Int(2),
                                    pos: at(1, 27),
                                }],
                            ),
                            pos: at(1, 9),
                        }),
                        Box::new(Expr {
                            kind: ExprKind::Var("k".into()),
                            pos: at(1, 32),
                        }),
                    ),
                    pos: at(1, 30),
                },
            },
            pos: at(1, 1),
        }];
        assert_eq!(b, expected);
    }

    #[test]
    fn keywords_need_word_boundaries() {
        assert_eq!(p("letter = 1"), "(set letter 1)");
        assert_eq!(p("iffy = work_done"), "(set iffy work_done)");
        assert_eq!(p("_x1 = fence_count"), "(set _x1 fence_count)");
    }

    #[test]
    fn nesting_limit() {
        let parens = |n: usize| format!("x = {}1{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(p(&parens(MAX_NESTING_DEPTH)), "(set x 1)");
        check_err(
            &parens(MAX_NESTING_DEPTH + 1),
            "nesting is too deep: more than 64 levels of blocks, parentheses and operators",
            1,
            5 + MAX_NESTING_DEPTH as u32,
        );

        let ifs = |n: usize| format!("{}{}", "if 1 {\n".repeat(n), "}\n".repeat(n));
        assert!(parse_block(&ifs(MAX_NESTING_DEPTH)).is_ok());
        let (message, line, column) = err(&ifs(MAX_NESTING_DEPTH + 1));
        assert!(message.starts_with("nesting is too deep"), "{message}");
        assert_eq!((line, column), (65, 6));

        let nots = |n: usize| format!("x = {}1", "!".repeat(n));
        assert!(parse_block(&nots(MAX_NESTING_DEPTH)).is_ok());
        assert!(parse_block(&nots(MAX_NESTING_DEPTH + 1)).is_err());

        let sum = |n: usize| format!("x = 1{}", " + 1".repeat(n));
        assert!(parse_block(&sum(MAX_NESTING_DEPTH)).is_ok());
        // A flat chain is told it is one: each operator counts a level.
        check_err(
            &sum(MAX_NESTING_DEPTH + 1),
            "this expression is too deep: more than 64 levels of blocks, parentheses and \
             operators, each operator of a chain such as `a + b + c` counting one; split it \
             with a local (`let s = a + b`, then `s + c`)",
            1,
            7 + 4 * MAX_NESTING_DEPTH as u32,
        );

        let chain = |n: usize| format!("if a {{}}{}", " else if a {}".repeat(n));
        // Each `else if` nests one level deeper, and its block one more.
        assert!(parse_block(&chain(MAX_NESTING_DEPTH - 1)).is_ok());
        assert!(parse_block(&chain(MAX_NESTING_DEPTH)).is_err());

        // Many statements in a row are not nesting.
        let flat = "x = x + 1\n".repeat(10_000);
        assert_eq!(parse_block(&flat).unwrap().len(), 10_000);
    }

    // -- errors -------------------------------------------------------------

    #[test]
    fn error_unclosed_block() {
        check_err(
            "x = 1\nwhile x {\n  if y {\n x = 2\n }",
            "expected `}` to close the block opened at line 2, column 9, found end of script",
            5,
            3,
        );
        check_err(
            "if a {",
            "expected `}` to close the block opened at line 1, column 6, found end of script",
            1,
            7,
        );
    }

    #[test]
    fn error_unexpected_character() {
        check_err("x = 1 @ 2", "unexpected character `@`", 1, 7);
        check_err("x = é", "unexpected character `é`", 1, 5);
        check_err("x = 1\n  $", "unexpected character `$`", 2, 3);
        check_err("x = \u{0}", "unexpected character `\\u{0}`", 1, 5);
        check_err("x = \"s\"", "unexpected character `\"`", 1, 5);
        // A parse error before a lexical error is reported first.
        check_err(
            "x = ) @",
            "expected an expression after `=`, found `)`",
            1,
            5,
        );
    }

    #[test]
    fn error_assign_in_condition() {
        check_err("if x = 1 {\n}", "`=` assigns; to compare use `==`", 1, 6);
        check_err(
            "while a.b = 0 { }",
            "`=` assigns; to compare use `==`",
            1,
            11,
        );
        check_err("assert x = 1", "`=` assigns; to compare use `==`", 1, 10);
        check_err("y = (x = 1)", "`=` assigns; to compare use `==`", 1, 8);
    }

    #[test]
    fn error_atomic_arguments() {
        check_err(
            "fetch_add(ctr.v, 1, 2)",
            "`fetch_add` takes a place and 1 value, found 3 arguments",
            1,
            1,
        );
        check_err(
            "x = fetch_add(ctr.v)",
            "`fetch_add` takes a place and 1 value, found 1 argument",
            1,
            5,
        );
        check_err(
            "cmpxchg(a.b, 1)",
            "`cmpxchg` takes a place and 2 values, found 2 arguments",
            1,
            1,
        );
        check_err(
            "xchg()",
            "`xchg` takes a place and 1 value, found 0 arguments",
            1,
            1,
        );
        check_err(
            "cmpxchg(x, 0, 1)",
            "the first argument of `cmpxchg` must be a field such as `inst.field`, found `x`",
            1,
            9,
        );
        check_err(
            "cmpxchg(a.b + 1, 0, 1)",
            "the first argument of `cmpxchg` must be a field such as `inst.field`, \
             found an expression",
            1,
            9,
        );
        check_err(
            "xchg(f(), 0)",
            "the first argument of `xchg` must be a field such as `inst.field`, \
             found a call of `f`",
            1,
            6,
        );
    }

    #[test]
    fn error_expected_statement() {
        check_err("x = 1\n)", "expected a statement, found `)`", 2, 1);
        check_err("+ 1", "expected a statement, found `+`", 1, 1);
        check_err("x = 1\n+ 2", "expected a statement, found `+`", 2, 1);
        check_err("{ x = 1 }", "expected a statement, found `{`", 1, 1);
        check_err(
            "x = 1 }",
            "unexpected `}`: there is no open block to close",
            1,
            7,
        );
        check_err(
            "else { }",
            "`else` must follow the `}` of an `if` block",
            1,
            1,
        );
        check_err(
            "if a { } ; else { }",
            "`else` must follow the `}` of an `if` block; a `;` ends the `if` statement \
             before it, so remove that `;`",
            1,
            12,
        );
    }

    #[test]
    fn error_literals() {
        check_err(
            "x = 99999999999999999999",
            "integer literal `99999999999999999999` does not fit in 64 bits",
            1,
            5,
        );
        check_err(
            "x = 9223372036854775808",
            "integer literal `9223372036854775808` does not fit in 64 bits",
            1,
            5,
        );
        check_err(
            "x = -9223372036854775809",
            "integer literal `9223372036854775809` does not fit in 64 bits",
            1,
            6,
        );
        check_err(
            "x = 0xFFFF_FFFF_FFFF_FFFF",
            "integer literal `0xFFFF_FFFF_FFFF_FFFF` does not fit in 64 bits",
            1,
            5,
        );
        check_err(
            "x = -(9223372036854775808)",
            "integer literal `9223372036854775808` does not fit in 64 bits",
            1,
            7,
        );
        check_err(
            "x = 0b102",
            "invalid digit `2` in binary integer literal `0b102`",
            1,
            5,
        );
        check_err(
            "x = 12ab",
            "invalid digit `a` in decimal integer literal `12ab`",
            1,
            5,
        );
        check_err("x = 0x", "integer literal `0x` has no digits", 1, 5);
        check_err(
            "x = 1.5",
            "`1.` starts a fractional number; scripts have 64-bit integers only",
            1,
            5,
        );
    }

    #[test]
    fn error_places() {
        check_err(
            "a[1] = 2",
            "locals are not arrays; did you mean `a[..].field`?",
            1,
            2,
        );
        check_err(
            "x = a[1] + 2",
            "locals are not arrays; did you mean `a[..].field`?",
            1,
            6,
        );
        check_err(
            "x = a[1][2].f",
            "locals are not arrays; did you mean `a[..].field`?",
            1,
            6,
        );
        check_err(
            "x = a.",
            "expected a field name after `a.`, found end of script",
            1,
            7,
        );
        check_err(
            "x = a[1].5",
            "expected a field name after `a[..].`, found `5`",
            1,
            10,
        );
        check_err(
            "x = a.b[1].c[2]",
            "unexpected `[` after `a.b[..].c`: a place is `inst.field`, `inst[i].field`, \
             `inst.field[j]` or `inst[i].field[j]`, a field being a name or a path \
             with one index at most (`inst.items[j].next`)",
            1,
            13,
        );
        check_err(
            "x = a.b.",
            "expected a field name after `a.b.`, found end of script",
            1,
            9,
        );
        check_err(
            "a[1].b[2][3] = 0",
            "unexpected `[` after `a[..].b[..]`: a place is `inst.field`, `inst[i].field`, \
             `inst.field[j]` or `inst[i].field[j]`, a field being a name or a path \
             with one index at most (`inst.items[j].next`)",
            1,
            10,
        );
        check_err(
            "x = a[1 .b",
            "expected `]` to close the `[` at line 1, column 6, found `.`",
            1,
            9,
        );
    }

    #[test]
    fn error_assignments() {
        check_err("let 5 = x", "expected a name after `let`, found `5`", 1, 5);
        check_err(
            "let if = x",
            "expected a name after `let`, found `if`",
            1,
            5,
        );
        check_err("let x == 1", "expected `=` after `let x`, found `==`", 1, 7);
        check_err(
            "let x",
            "expected `=` after `let x`, found end of script",
            1,
            6,
        );
        check_err(
            "let x =\n",
            "expected an expression after `=`, found end of script",
            2,
            1,
        );
        check_err(
            "f() = 1",
            "the left side of `=` must be a local or a field such as `inst.field`, \
             found a call of `f`",
            1,
            1,
        );
        check_err(
            "a + b = 1",
            "the left side of `=` must be a local or a field such as `inst.field`, \
             found an expression",
            1,
            3,
        );
        check_err(
            "x += 1",
            "`+=` is not supported; write `name = name + value` \
             or `inst.field = inst.field + value`",
            1,
            3,
        );
        check_err("x = y = 1", "`=` assigns; to compare use `==`", 1, 7);
    }

    #[test]
    fn error_statement_ends() {
        check_err(
            "x y",
            "expected a newline or `;` after the statement, found `y`",
            1,
            3,
        );
        check_err(
            "if a { x y }",
            "expected a newline, `;` or `}` after the statement, found `y`",
            1,
            10,
        );
        check_err(
            "return 1 2",
            "expected a newline or `;` after the statement, found `2`",
            1,
            10,
        );
        check_err(
            "fence 1",
            "expected a newline or `;` after the statement, found `1`",
            1,
            7,
        );
        check_err("x = f\n(1)\n)", "expected a statement, found `)`", 3, 1);
    }

    #[test]
    fn error_expressions() {
        check_err(
            "x = 1 +",
            "expected an expression after `+`, found end of script",
            1,
            8,
        );
        check_err(
            "x = 1 + / 2",
            "expected an expression after `+`, found `/`",
            1,
            9,
        );
        check_err(
            "x = -\n1",
            "expected an expression after `-`, found a newline",
            1,
            6,
        );
        check_err(
            "x = !}",
            "expected an expression after `!`, found `}`",
            1,
            6,
        );
        check_err(
            "x = (1 + 2",
            "expected `)` to close the `(` at line 1, column 5, found end of script",
            1,
            11,
        );
        check_err(
            "x = (1\n 2)",
            "expected `)` to close the `(` at line 1, column 5, found `2`",
            2,
            2,
        );
        check_err(
            "x = ()",
            "expected an expression after `(`, found `)`",
            1,
            6,
        );
        check_err(
            "f(1 2)",
            "expected `,` or `)` after an argument of `f`, found `2`",
            1,
            5,
        );
        check_err(
            "f(1,,2)",
            "expected an argument of `f` or `)`, found `,`",
            1,
            5,
        );
        check_err(
            "f(1",
            "expected `,` or `)` after an argument of `f`, found end of script",
            1,
            4,
        );
        check_err(
            "x = while",
            "expected an expression after `=`, found `while`",
            1,
            5,
        );
        check_err(
            "work",
            "expected a cycle count after `work`, found end of script",
            1,
            5,
        );
        check_err(
            "assert\nx",
            "expected a condition after `assert`, found a newline",
            1,
            7,
        );
        check_err(
            "x = a === b",
            "expected an expression after `==`, found `=`",
            1,
            9,
        );
    }

    #[test]
    fn error_blocks() {
        check_err(
            "while x\n y = 1",
            "expected `{` after the condition of `while`, found `y`",
            2,
            2,
        );
        check_err("if {", "expected a condition after `if`, found `{`", 1, 4);
        check_err(
            "repeat { }",
            "expected a count after `repeat`, found `{`",
            1,
            8,
        );
        check_err(
            "repeat 3",
            "expected `{` after the count of `repeat`, found end of script",
            1,
            9,
        );
        check_err(
            "if a { } else y = 1",
            "expected `{` or `if` after `else`, found `y`",
            1,
            15,
        );
        check_err(
            "if a { } else",
            "expected `{` or `if` after `else`, found end of script",
            1,
            14,
        );
        check_err(
            "if a {\n} else if b {\n",
            "expected `}` to close the block opened at line 2, column 13, found end of script",
            3,
            1,
        );
    }

    #[test]
    fn display_and_error_trait() {
        let e = parse_block("\n  x = @").unwrap_err();
        assert_eq!(e.to_string(), "line 2, column 7: unexpected character `@`");
        let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
        assert_eq!(boxed.to_string(), e.to_string());
    }

    // -- robustness ---------------------------------------------------------

    const SMALL_STACK: usize = 512 * 1024;

    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..3000 {
            let len = rng.below(200);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_block(&text);
        }
    }

    #[test]
    fn random_token_soup_never_panics() {
        const PIECES: &[&str] = &[
            "let ",
            "if ",
            "else ",
            "while ",
            "repeat ",
            "break",
            "continue",
            "return ",
            "work ",
            "fence",
            "assert ",
            "x",
            "y",
            "a.b",
            "a[",
            "]",
            ".f",
            "[1]",
            "(",
            ")",
            "{",
            "}",
            ",",
            ";",
            "\n",
            "=",
            "==",
            "!=",
            "+",
            "-",
            "*",
            "/",
            "%",
            "&&",
            "||",
            "&",
            "|",
            "^",
            "<<",
            ">>",
            "<",
            ">=",
            "!",
            "~",
            "0",
            "9223372036854775808",
            "0x",
            "0b2",
            "1_0",
            "#c\n",
            "//c\n",
            " ",
            "fetch_add(",
            "cmpxchg(",
            "f(",
            "@",
            "é",
            "1.5",
        ];
        let mut rng = XorShift(0x1234_5678_9ABC_DEF1);
        let mut parsed = 0;
        for _ in 0..5000 {
            let n = rng.below(40);
            let text: String = (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect();
            if let Ok(block) = parse_block(&text) {
                parsed += 1;
                // Render to walk the whole tree.
                let _ = block.iter().map(stmt).count();
            }
        }
        assert!(parsed > 0);
    }

    #[test]
    fn deep_input_never_panics() {
        let opens = "(".repeat(10_000);
        assert!(parse_block(&opens).is_err());
        assert!(parse_block(&format!("x = {opens}1{}", ")".repeat(10_000))).is_err());
        let braces = "{".repeat(10_000);
        assert!(parse_block(&braces).is_err());
        assert!(parse_block(&"if 1 {".repeat(10_000)).is_err());
        assert!(parse_block(&"}".repeat(10_000)).is_err());
        assert!(parse_block(&"x = ".repeat(10_000)).is_err());
        assert!(parse_block(&format!("x = {}1", "-".repeat(10_000))).is_err());
        assert!(parse_block(&format!("x = {}1", "!~".repeat(10_000))).is_err());
        assert!(parse_block(&format!("x = 1{}", " * 2".repeat(10_000))).is_err());
        assert!(parse_block(&format!("x = {}.f", "a[".repeat(10_000))).is_err());
        assert!(parse_block(&format!("x = {}1", "f(".repeat(10_000))).is_err());
        assert!(parse_block(&"if a {} else ".repeat(10_000)).is_err());
    }

    /// Parsing input nested right up to the limit must fit comfortably in a
    /// small thread stack, even in a debug build.
    #[test]
    fn deepest_accepted_input_fits_a_small_stack() {
        let n = MAX_NESTING_DEPTH;
        let inputs = [
            format!("x = {}1{}", "f(".repeat(n), ")".repeat(n)),
            format!("x = {}1{}", "(".repeat(n), ")".repeat(n)),
            format!("x = {}1{}", "a[".repeat(n), "].f".repeat(n)),
            format!("{}{}", "if 1 {\n".repeat(n), "}\n".repeat(n)),
            format!("if a {{}}{}", " else if a {}".repeat(n - 1)),
            format!("x = {}1", "-!".repeat(n / 2)),
            format!("x = 1{}", " + 1".repeat(n)),
        ];
        // A thread of its own only to choose the stack size under test.
        #[allow(
            clippy::disallowed_methods,
            reason = "a test's stack, not a simulation's thread"
        )]
        let handle = std::thread::Builder::new()
            .stack_size(SMALL_STACK)
            .spawn(move || inputs.iter().map(|src| parse_block(src).is_ok()).collect())
            .unwrap();
        let results: Vec<bool> = handle.join().unwrap();
        assert_eq!(results, vec![true; results.len()]);
    }

    #[test]
    fn very_long_input() {
        let mut src = String::new();
        for i in 0..20_000 {
            src += &format!("let v{i} = a[{i}].f[{i}] + 0x{i:x} // c\n");
        }
        assert_eq!(parse_block(&src).unwrap().len(), 20_000);
        let long_name = "n".repeat(100_000);
        assert_eq!(parse_block(&format!("{long_name} = 1")).unwrap().len(), 1);
    }
}
