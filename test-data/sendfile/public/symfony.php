<?php
// Symfony's BinaryFileResponse, trusting X-Sendfile-Type as its docs describe for a
// server that sets it: with the mapping ferrophp sends, it answers with X-Accel-Redirect.
// SENDFILE_DIR (from -e) is the private directory the test made.
require_once '/usr/share/php/Symfony/Component/HttpFoundation/autoload.php';

use Symfony\Component\HttpFoundation\BinaryFileResponse;
use Symfony\Component\HttpFoundation\Request;

BinaryFileResponse::trustXSendfileTypeHeader();
$request = Request::createFromGlobals();
$response = new BinaryFileResponse($_SERVER['SENDFILE_DIR'] . '/reports/q3.txt');
$response->setContentDisposition('attachment', 'q3.txt');
$response->prepare($request);
$response->send();
