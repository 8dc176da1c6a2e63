# Install rules and CPack .deb (filled below).
