<?php
// Under --confine: whether open_basedir lets this release read the file ?f names.
echo @file_get_contents((string) ($_GET['f'] ?? '')) === false ? 'refused' : 'readable';
