#include <gtest/gtest.h>

#include <sstream>

#include "report/table.h"

TEST(Table, AlignsColumns) {
  cudal1::Table t({"name", "speedup"}, {false, true});
  t.add_row({"a", "1.50x"});
  t.add_row({"longer-name", "12.00x"});
  std::ostringstream os;
  t.print(os);
  EXPECT_EQ(os.str(),
            "name         speedup\n"
            "-----------  -------\n"
            "a              1.50x\n"
            "longer-name   12.00x\n");
}
