#!/bin/sh
# Builds a PHP extension from its source directory with the image's own phpize and
# enables it. (APCu, igbinary and redis already ship in the image, off: enabling one is
# `RUN sed -i 's/^;extension=/extension=/' /opt/ferrophp/conf.d/20-igbinary.ini`.)
# For a derived image's build stage, which needs a compiler:
#
#   FROM ferrophp AS ext
#   USER root
#   RUN apt-get update && apt-get install -y --no-install-recommends build-essential autoconf
#   COPY msgpack-2.2.0/ /src/msgpack/
#   RUN /opt/ferrophp/docker/add-extension.sh /src/msgpack msgpack
#   FROM ferrophp
#   COPY --from=ext /opt/ferrophp/lib/php/extensions/ /opt/ferrophp/lib/php/extensions/
#   COPY --from=ext /opt/ferrophp/conf.d/ /opt/ferrophp/conf.d/
#
# Usage: add-extension.sh SOURCE_DIR NAME [CONFIGURE_ARGS...]
set -eu
src=$1 name=$2
shift 2
bin=/opt/ferrophp/bin
cd "$src"
"$bin/phpize"
./configure --with-php-config="$bin/php-config" "$@"
make -j"$(nproc)"
cp "modules/$name.so" "$("$bin/php-config" --extension-dir)/"
echo "extension=$name" >"/opt/ferrophp/conf.d/20-$name.ini"
