/// The benchmarks' `max_outgoing_bytes`: the session bus's 1 GB.
///
/// The throughput benchmarks send as fast as they can, with no flow control, and count every
/// delivery, for NotifyBus and its C baseline alike: the embedded bus's 1 MiB per receiver
/// would drop part of a flood to a receiver that falls behind.
let benchmarkOutgoingLimit = 1_000_000_000
