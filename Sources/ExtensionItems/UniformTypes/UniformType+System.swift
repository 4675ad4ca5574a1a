extension UniformType {
  /// `public.item`: the root of the physical hierarchy.
  public static let item = UniformType("public.item")
  /// `public.content`: the root of the content hierarchy.
  public static let content = UniformType("public.content")
  /// `public.composite-content`: content of mixed kinds, such as PDF.
  public static let compositeContent = UniformType("public.composite-content")
  /// `public.data`: any stream of bytes.
  public static let data = UniformType("public.data")
  /// `public.directory`: a directory.
  public static let directory = UniformType("public.directory")
  /// `public.folder`: a directory a person would call a folder.
  public static let folder = UniformType("public.folder")
  /// `public.archive`: an archive of files.
  public static let archive = UniformType("public.archive")
  /// `com.pkware.zip-archive`: a zip archive.
  public static let zip = UniformType("com.pkware.zip-archive")
  /// `public.contact`: contact information.
  public static let contact = UniformType("public.contact")
  /// `public.url`: a URL.
  public static let url = UniformType("public.url")
  /// `public.file-url`: a URL with the `file` scheme.
  public static let fileURL = UniformType("public.file-url")
  /// `public.text`: any text, plain or marked up.
  public static let text = UniformType("public.text")
  /// `public.plain-text`: text with no markup.
  public static let plainText = UniformType("public.plain-text")
  /// `public.utf8-plain-text`: plain text in UTF-8.
  public static let utf8PlainText = UniformType("public.utf8-plain-text")
  /// `public.utf16-plain-text`: plain text in UTF-16.
  public static let utf16PlainText = UniformType("public.utf16-plain-text")
  /// `public.rtf`: Rich Text Format.
  public static let rtf = UniformType("public.rtf")
  /// `com.apple.rtfd`: Rich Text Format with attachments, as a flattened directory.
  public static let rtfd = UniformType("com.apple.rtfd")
  /// `public.html`: HTML.
  public static let html = UniformType("public.html")
  /// `public.xml`: XML.
  public static let xml = UniformType("public.xml")
  /// `public.json`: JSON.
  public static let json = UniformType("public.json")
  /// `public.vcard`: a vCard.
  public static let vCard = UniformType("public.vcard")
  /// `com.apple.property-list`: a property list in any format.
  public static let propertyList = UniformType("com.apple.property-list")
  /// `com.adobe.pdf`: a PDF document.
  public static let pdf = UniformType("com.adobe.pdf")
  /// `public.image`: any image.
  public static let image = UniformType("public.image")
  /// `public.jpeg`: a JPEG image.
  public static let jpeg = UniformType("public.jpeg")
  /// `public.png`: a PNG image.
  public static let png = UniformType("public.png")
  /// `public.heic`: a HEIC image.
  public static let heic = UniformType("public.heic")
  /// `public.audiovisual-content`: audio, video or both.
  public static let audiovisualContent = UniformType("public.audiovisual-content")
  /// `public.movie`: video, possibly with audio.
  public static let movie = UniformType("public.movie")
  /// `public.video`: video without audio.
  public static let video = UniformType("public.video")
  /// `public.audio`: audio.
  public static let audio = UniformType("public.audio")
  /// `public.mpeg-4`: an MPEG-4 movie.
  public static let mpeg4Movie = UniformType("public.mpeg-4")
  /// `com.apple.active-webpage`: the type a host adds to a web URL it has loaded, which
  /// `NSExtensionActivationSupportsWebPageWithMaxCount` counts.
  public static let activeWebPage = UniformType("com.apple.active-webpage")
}
