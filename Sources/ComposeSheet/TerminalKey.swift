/// One key press read from a terminal in raw mode, as ``TerminalKeyDecoder`` decodes it.
public enum TerminalKey: Hashable, Sendable {
  /// Text typed or pasted: one Unicode scalar (a grapheme may take several).
  case character(Unicode.Scalar)
  /// Return or Enter (`\r` or `\n`).
  case enter
  /// Tab.
  case tab
  /// Shift-Tab (`ESC [ Z`).
  case backTab
  /// Backspace (DEL `0x7F` or BS `0x08`).
  case backspace
  /// Delete, the key that removes the character under the cursor (`ESC [ 3 ~`).
  case delete
  /// Escape pressed alone: an `ESC` with nothing after it (see ``TerminalKeyDecoder/flush()``).
  case escape
  /// The arrow keys.
  case left, right, up, down
  /// Home and End.
  case home, end
  /// Control with a letter, `a` to `z` (Control-C is `.control("c")`), other than the
  /// letters that are keys of their own: I (Tab), J and M (Enter), H (Backspace).
  case control(Character)
}
