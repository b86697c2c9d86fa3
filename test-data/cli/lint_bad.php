<?php
echo "missing semicolon"
echo "next";
