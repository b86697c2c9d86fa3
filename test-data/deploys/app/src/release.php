<?php
// The release number: server/tests/deploys.rs copies this application once per release
// and writes the number in place of the placeholder, so each release's code differs (and
// OPcache has a reason to serve the wrong one if it kept an old entry).
const RELEASE = '@RELEASE@';
