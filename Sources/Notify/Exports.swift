// NotifyCore (names, statuses, the wire mapping) is part of this module's API:
// `import Notify` is all a client writes.
@_exported public import NotifyCore
