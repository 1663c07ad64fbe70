%modules = ( # path to module name map
    "QtFastConnect" => "$basedir/src/fastconnect",
);
%moduleheaders = ( # restrict the module headers to those found in relative path
);
%dependencies = (
    "qtbase" => "",
);
