"""hpcstruct's ``.hpcstruct`` (XML, version 4.9): the model as columns (:mod:`.model`), the readers (streamed by
expat, :mod:`.stream`; scanned with numpy, :mod:`.scan`; :func:`~hpcsa.formats.hpcstruct.reader.read_hpcstruct`
picks one), the writer (:mod:`.writer`) and the parsed-structure cache (:mod:`.parsedcache`)."""
