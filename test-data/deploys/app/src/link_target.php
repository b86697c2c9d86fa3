<?php
// Included by public/link.php through the `current` link, not through __DIR__.
return '@RELEASE@';
