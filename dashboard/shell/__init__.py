"""The app shell around every page: header, navigation, search, status banner, deep and entity links."""
