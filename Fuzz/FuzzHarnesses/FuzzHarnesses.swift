// Every fuzz harness, by the name of its folder under Fuzz/: what the libFuzzer driver
// (`notifybus-fuzz`) runs and what FuzzTests replays each corpus through.

import BridgeMessageFuzz
import CommandLineSupportFuzz
import ComposeSheetFuzz
import DBusFuzz
import DefaultsFileReaderFuzz
import DesktopEntryFuzz
import ExtensionManifestFuzz
import ItemCodecFuzz
import KeyLogParserFuzz
import NotifydConfigurationFuzz
import NotifydStateFileFuzz
import PredicateParserFuzz
import SharedArgumentFuzz
import SpoolEntryParserFuzz
import SpoolSegmentParserFuzz

/// One fuzz harness: it runs one input and traps when an invariant does not hold.
public typealias FuzzHarness = @Sendable ([UInt8]) -> Void

/// The harnesses by name; the name is the folder under Fuzz/ holding the harness's sources,
/// its seed corpus and its libFuzzer options.
public let fuzzHarnesses: [String: FuzzHarness] = [
  "BridgeMessage": BridgeMessageFuzz.fuzz,
  "CommandLineSupport": CommandLineSupportFuzz.fuzz,
  "ComposeSheet": ComposeSheetFuzz.fuzz,
  "DBus": DBusFuzz.fuzz,
  "DefaultsFileReader": DefaultsFileReaderFuzz.fuzz,
  "DesktopEntry": DesktopEntryFuzz.fuzz,
  "ExtensionManifest": ExtensionManifestFuzz.fuzz,
  "ItemCodec": ItemCodecFuzz.fuzz,
  "KeyLogParser": KeyLogParserFuzz.fuzz,
  "NotifydConfiguration": NotifydConfigurationFuzz.fuzz,
  "NotifydStateFile": NotifydStateFileFuzz.fuzz,
  "PredicateParser": PredicateParserFuzz.fuzz,
  "SharedArgument": SharedArgumentFuzz.fuzz,
  "SpoolEntryParser": SpoolEntryParserFuzz.fuzz,
  "SpoolSegmentParser": SpoolSegmentParserFuzz.fuzz,
]
