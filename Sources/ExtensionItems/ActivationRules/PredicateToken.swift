/// A token of the predicate language, with its UTF-8 offset.
struct PredicateToken: Equatable {
  enum Kind: Equatable {
    case identifier(String)
    case keyword(Keyword)
    case variable(String)
    case string(String)
    case integer(Int64)
    case double(Double)
    case keyPathOperator(String)
    case operation(PredicateComparison.Operator)
    case punctuation(Punctuation)
    case end
  }

  enum Punctuation: String {
    case openParenthesis = "("
    case closeParenthesis = ")"
    case openBrace = "{"
    case closeBrace = "}"
    case openBracket = "["
    case closeBracket = "]"
    case comma = ","
    case dot = "."
    case minus = "-"
    case and = "&&"
    case or = "||"
    case not = "!"
  }

  enum Keyword: String, CaseIterable {
    case and = "AND"
    case or = "OR"
    case not = "NOT"
    case any = "ANY"
    case some = "SOME"
    case all = "ALL"
    case none = "NONE"
    case truePredicate = "TRUEPREDICATE"
    case falsePredicate = "FALSEPREDICATE"
    case subquery = "SUBQUERY"
    case `true` = "TRUE"
    case yes = "YES"
    case `false` = "FALSE"
    case no = "NO"
    case null = "NULL"
    case `nil` = "NIL"
    case `self` = "SELF"
  }

  var kind: Kind
  var offset: Int

  /// The key-path operators the evaluator implements; the lexer refuses any other, such as
  /// `@distinctUnionOfArrays`, rather than let it evaluate to `NULL`.
  static let keyPathOperators = ["@count", "@sum", "@avg", "@min", "@max"]
}
