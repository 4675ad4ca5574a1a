// What bus tests need besides a bus: products, processes, temporary directories, waits.
@_exported public import TestSupport
